import AttributionModel
import Foundation

/// Wall-clock time in the pipeline's unit, milliseconds since 1970.
enum WallClock {
    static func now() -> Milliseconds { Milliseconds((Date().timeIntervalSince1970 * 1000).rounded()) }
}
