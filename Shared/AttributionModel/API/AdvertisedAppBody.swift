import Foundation

/// An advertised app's configuration as app teams have it: JSON, or their Info.plist (XML property
/// list), with the AdAttributionKit keys flat or inside `AdAttributionKitConfigurations`. Lives in the
/// model rather than in ingest so the fuzzer (Fuzz/) runs the very code ingest runs.
public enum AdvertisedAppBody {
    /// Why a body was refused: the reason ingest answers 400 with, and the plain words.
    public typealias Problem = RequestProblem

    public static func decode(_ bytes: Data, contentType: String?) throws -> IngestRequests.AdvertisedApp {
        let isPropertyList = contentType.map { $0.contains("plist") || $0.contains("xml") } ?? false || Self.looksLikeXML(bytes)
        // XML is the documented form. Anything else would reach CoreFoundation's binary and OpenStep
        // parsers, and swift-corelibs-foundation segfaults bridging a binary plist that holds a set
        // (found by Fuzz/, fuzz-plist): refused before PropertyListSerialization sees it.
        if isPropertyList, !Self.looksLikeXML(bytes) {
            throw Problem(.invalidPropertyList, "the body is not an XML property list")
        }
        let root: Any
        do {
            root =
                isPropertyList
                ? try PropertyListSerialization.propertyList(from: bytes, options: [], format: nil)
                : try JSONSerialization.jsonObject(with: bytes)
        } catch {
            throw Problem(
                isPropertyList ? .invalidPropertyList : .invalidJSON,
                isPropertyList ? "the body is not an XML property list" : "the body is not valid JSON")
        }
        guard var dictionary = root as? [String: Any] else {
            throw Problem(.invalidJSON, "the configuration must be a dictionary")
        }
        if let nested = dictionary.removeValue(forKey: IngestRequests.AdvertisedApp.nestedContainer) {
            guard let nested = nested as? [String: Any] else {
                throw Problem(.invalidJSON, "AdAttributionKitConfigurations must be a dictionary")
            }
            dictionary.merge(nested) { _, inner in inner }
        }
        if isPropertyList {
            // A whole Info.plist holds many other keys (CFBundle…): only ours are read.
            dictionary = dictionary.filter { IngestRequests.AdvertisedApp.knownKeys.contains($0.key) }
        } else if let unknown = dictionary.keys.filter({ !IngestRequests.AdvertisedApp.knownKeys.contains($0) }).sorted().first {
            throw Problem(.unknownKey, "\(unknown) is not an AdAttributionKit configuration key")
        }
        // A property list can hold dates and data, which JSON cannot: a 400 that says so, not a 500.
        guard let json = try? JSONSerialization.data(withJSONObject: dictionary) else {
            throw Problem(.invalidConfiguration, "values must be dictionaries, strings, numbers or booleans, not dates or data")
        }
        do {
            return try JSONDecoder().decode(IngestRequests.AdvertisedApp.self, from: json)
        } catch let error as DecodingError {
            throw Problem(.invalidConfiguration, error.plainDescription)
        }
    }

    public static func looksLikeXML(_ bytes: Data) -> Bool {
        let start = bytes.prefix(64).drop {
            $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 || $0 == 0xEF || $0 == 0xBB || $0 == 0xBF
        }
        return start.first == UInt8(ascii: "<")
    }
}
