import Testing

/// Every test that starts real processes, one at a time: several pipelines at once on a 2-core machine
/// starve each other, and their scaled clocks (a day lasts half a second) then miss their windows.
/// Nested suites inherit `.serialized`; the pure and Redis-level tests still run in parallel.
@Suite("Real processes, one suite at a time", .serialized)
enum PipelineSuites {}
