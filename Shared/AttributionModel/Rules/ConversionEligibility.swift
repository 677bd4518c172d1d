/// Whether a reported conversion may become an attributed one, before and after winner selection
/// (spec sections 3 and 8). Refusals are not errors: the conversion is simply not attributed.
public enum ConversionEligibility {
    public enum Refusal: String, Error, Sendable, Hashable, CaseIterable {
        /// No impression qualified: an organic conversion.
        case noEligibleImpression = "no-eligible-impression"
        /// Too soon after the previous conversion (`AttributionCooldown`).
        case cooldown
        /// 2 re-engagements per device and app in 30 days (our decision, section 8).
        case appReengagementCap = "re-engagement-app-cap"
        /// 20 re-engagements per device in 365 days (our decision, section 8).
        case deviceReengagementCap = "re-engagement-device-cap"
    }

    public static let appCap = (count: 2, period: Duration.days(30))
    public static let deviceCap = (count: 20, period: Duration.days(365))

    /// Checks before selection: the cooldown after the last conversion (install cooldown after an
    /// install, re-engagement cooldown after a re-engagement). A re-engagement needs no install the
    /// pipeline saw: the app reporting it is running, so it is installed (spec section 3), even when
    /// the install came before the pipeline existed or its record expired with a lapsed user's state.
    public static func precheck(
        _ report: ConversionReport, state: DeviceAttributionState, app: AdvertisedAppConfiguration, policy: TimePolicy
    ) -> Refusal? {
        if let last = state.conversions.max(by: { $0.time < $1.time }) {
            let hours =
                last.conversionType == .reengagement
                ? app.attributionCooldown?.reengagementCooldownHours : app.attributionCooldown?.installCooldownHours
            if let hours, hours > 0, report.time < last.time + policy.milliseconds(.hours(Int64(hours))) { return .cooldown }
        }
        return nil
    }

    /// Re-engagement caps once the winner is known; development winners have none (Apple's developer mode).
    /// `deviceReengagements` holds this device's re-engagement times across all apps.
    public static func caps(
        _ report: ConversionReport, winnerIsDevelopment: Bool, state: DeviceAttributionState,
        deviceReengagements: [Milliseconds], policy: TimePolicy
    ) -> Refusal? {
        guard report.conversionType == .reengagement, !winnerIsDevelopment else { return nil }
        let appSince = report.time - policy.milliseconds(appCap.period)
        let forApp = state.conversions.filter {
            $0.conversionType == .reengagement && $0.time > appSince && $0.time <= report.time
        }
        if forApp.count >= appCap.count { return .appReengagementCap }
        let deviceSince = report.time - policy.milliseconds(deviceCap.period)
        if deviceReengagements.filter({ $0 > deviceSince && $0 <= report.time }).count >= deviceCap.count {
            return .deviceReengagementCap
        }
        return nil
    }
}
