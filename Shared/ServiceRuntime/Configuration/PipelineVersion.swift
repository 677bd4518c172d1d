/// The version every executable reports (`--version`): the project's, one for all of them, since
/// they are released together and must run at the same version.
public enum PipelineVersion {
    public static let current = "0.1.0-dev"
}
