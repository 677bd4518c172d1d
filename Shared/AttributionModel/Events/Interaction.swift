/// How the person met the ad: a tap (click) or time on screen (view). Click beats view.
public enum InteractionType: String, Sendable, Codable, Hashable {
    case click
    case view
}

/// A reported interaction with an impression, with the device-side facts the rules check.
public struct Interaction: Sendable, Codable, Hashable {
    public var type: InteractionType
    /// Click: when the tap happened. View: when the view ended (the view counts from then).
    public var time: Milliseconds
    /// Click: when the impression was loaded for display (a tap counts only within 15 minutes of it).
    public var loadedAt: Milliseconds?
    /// View: when the ad appeared on screen (a begin/end view counts only after 2 s on screen). Absent
    /// for a view recorded in one call (Apple's `AppImpression.handleView()`, iOS 26.2), for which Apple
    /// documents neither a minimum time on screen nor a rule against overlapping views.
    public var begin: Milliseconds?

    public init(type: InteractionType, time: Milliseconds, loadedAt: Milliseconds? = nil, begin: Milliseconds? = nil) {
        self.type = type
        self.time = time
        self.loadedAt = loadedAt
        self.begin = begin
    }

    public static func click(at time: Milliseconds, loadedAt: Milliseconds) -> Interaction {
        Interaction(type: .click, time: time, loadedAt: loadedAt)
    }

    public static func view(begin: Milliseconds, end: Milliseconds) -> Interaction {
        Interaction(type: .view, time: end, begin: begin)
    }

    /// A view recorded in one call (`handleView()`) at `time`.
    public static func oneCallView(at time: Milliseconds) -> Interaction {
        Interaction(type: .view, time: time)
    }

    enum CodingKeys: String, CodingKey {
        case type, time
        case loadedAt = "loaded-at"
        case begin
    }
}
