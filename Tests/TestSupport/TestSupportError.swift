@_exported import PipelineLaunch

/// A fixture could not be set up: the launcher's error, under the name the suites use. The launcher
/// (Redis and Redis Cluster as child processes) is exported with TestSupport, so a suite imports one.
public typealias TestSupportError = LaunchError
