import Foundation

/// The version every executable reports (`--version`): the project's, one for all of them, since
/// they are released together and must run at the same version.
public enum PipelineVersion {
    public static let current = "0.2.0"

    /// The source revision of the build, for `build_info`: the project's image sets `PIPELINE_REVISION`
    /// to the commit it was built from (its `org.opencontainers.image.revision` label); "unknown" else.
    public static var revision: String {
        ProcessInfo.processInfo.environment["PIPELINE_REVISION"].flatMap { $0.isEmpty ? nil : $0 } ?? "unknown"
    }
}
