import AttributionModel

/// What one simulated device did, with the times actually sent, and what the pipeline should
/// attribute from it according to the model's own winner selection.
struct DeviceOutcome: Sendable {
    var device: SimulationPlan.DeviceSpec
    var impressions: [VerifiedImpression]
    var conversionTime: Milliseconds?
    var attribution: WinnerSelection.Result?
    var updatesSent = 0
}
