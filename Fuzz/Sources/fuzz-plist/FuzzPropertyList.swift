import AttributionModel
import Foundation

/// `PUT /v1/admin/advertised-apps/{item}` as ingest handles it: the body as JSON or a property list
/// (`AdvertisedAppBody.decode`), then the range checks and the copy endpoint. Thrown errors are
/// refusals and fine; a trap or a sanitizer report is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPropertyList(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    // Without a content type ingest picks XML by the leading `<`, else JSON.
    PropertyListHarness.register(bytes, contentType: nil)
    // A plist content type on a body that is not XML: refused before PropertyListSerialization sees it
    // (binary plists with a set crashed Foundation), which this keeps checking.
    if !AdvertisedAppBody.looksLikeXML(bytes) {
        PropertyListHarness.register(bytes, contentType: "application/x-plist")
    }
    return 0
}

enum PropertyListHarness {
    static func register(_ bytes: Data, contentType: String?) {
        guard let app = try? AdvertisedAppBody.decode(bytes, contentType: contentType) else { return }
        let configuration = app.configuration(itemIdentifier: 1)
        _ = configuration.validationProblems()
        if let endpoint = configuration.attributionCopyEndpoint {
            _ = CopyEndpoint.reportURL(for: endpoint)
        }
    }
}
