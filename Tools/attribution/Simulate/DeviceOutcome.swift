import AttributionModel

/// What one simulated device did, with the times actually sent, and what the pipeline should
/// attribute from it according to the model's own winner selection.
struct DeviceOutcome: Sendable {
    var device: SimulationPlan.DeviceSpec
    var impressions: [VerifiedImpression]
    var conversionTime: Milliseconds?
    var attribution: WinnerSelection.Result?
    var updatesSent = 0
    var secondUpdateSent = false
    /// The conversion window (0–2) the second update landed in, nil when none was sent or it came after
    /// the last window: a window-1 postback needs it in window 1 (a late one lands in window 2).
    var secondUpdateWindow: Int?
}
