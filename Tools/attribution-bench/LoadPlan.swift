import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import NIOCore
import ToolSupport

/// One request of a load run: its route, its body (signed beforehand), the kind and number of events
/// it carries, and the index of its first event in the offer, which fixes when it is due.
struct LoadRequest: Sendable {
    var kind: LoadEventKind
    var batch: Bool
    var body: ByteBuffer
    var events: Int
    var firstEvent: Int
    /// The offer's devices this request carries events of: `firstDevice` and the next `events - 1`, in
    /// item order.
    var firstDevice: Int

    var path: String { batch ? kind.path + "/batch" : kind.path }
}

/// The three kinds of event a load run offers: impressions alone, or per device of a campaign an
/// impression, its install and a value update.
enum LoadEventKind: String, Sendable, CaseIterable, Codable, CodingKeyRepresentable {
    case impression
    case install
    case valueUpdate = "value-update"

    var path: String {
        switch self {
        case .impression: "/v1/impressions"
        case .install: "/v1/conversions"
        case .valueUpdate: "/v1/conversion-value-updates"
        }
    }

    /// Conversions and updates carry the advertised app's key; impressions authenticate by signature.
    var needsAppKey: Bool { self != .impression }
}

/// The whole offer of a load run, built (and every impression signed) before the clock starts, so the
/// run measures ingest and not this tool.
struct LoadPlan {
    var network: AdNetworkIdentifier
    var key: P256.Signing.PrivateKey
    var app: ItemIdentifier
    var publisher: ItemIdentifier
    var campaign: Bool
    var rate: Int
    var batch: Int

    /// `total` events in requests of `batch` events each, each impression on a fresh device. A
    /// campaign sends, per `batch` devices, the batch of their
    /// impressions, then the batch of their installs, then the batch of their value updates, so each
    /// impression is sent before its install. With `batch` 1 that is impression, install, update per device.
    func requests(total: Int) async throws -> [LoadRequest] {
        let now = Milliseconds(Date().timeIntervalSince1970 * 1000)
        let run = UUID().uuidString.prefix(8)
        let kinds: [LoadEventKind] = campaign ? LoadEventKind.allCases : [.impression]
        let devices = total / kinds.count
        // Every event's place in the offer: its device, its kind, its index (which sets its time).
        var slots: [(device: Int, kind: LoadEventKind, index: Int)] = []
        slots.reserveCapacity(devices * kinds.count)
        for group in stride(from: 0, to: devices, by: batch) {
            let members = group..<min(devices, group + batch)
            for kind in kinds {
                for device in members { slots.append((device, kind, slots.count)) }
            }
        }
        let signatures = try await signedImpressions(
            slots.filter { $0.kind == .impression }.map { eventTime($0.index, from: now) })
        var nextSignature = 0
        var requests: [LoadRequest] = []
        var start = 0
        while start < slots.count {
            let kind = slots[start].kind
            var end = start + 1
            while end < slots.count, end - start < batch, slots[end].kind == kind { end += 1 }
            var items: [Data] = []
            for slot in slots[start..<end] {
                // A fresh device per impression (or per campaign device): reusing devices across the runs
                // of a capacity search piles impressions onto each, and the pipeline slows as they grow.
                let device = "load-\(run)-\(slot.device)"
                let time = eventTime(slot.index, from: now)
                switch kind {
                case .impression:
                    let body: [String: Any] = [
                        "device-identifier": device, "impression": signatures[nextSignature],
                        "interaction": ["type": "click", "loaded-at": time - 500, "time": time],
                    ]
                    nextSignature += 1
                    items.append(try JSONSerialization.data(withJSONObject: body))
                case .install:
                    let body = IngestRequests.Conversion(
                        deviceIdentifier: device, advertisedItemIdentifier: app, conversionType: .download, time: time,
                        countryCode: "US")
                    items.append(try JSONCoding.encoder.encode(body))
                case .valueUpdate:
                    let body = IngestRequests.ValueUpdate(
                        deviceIdentifier: device, advertisedItemIdentifier: app, time: time,
                        update: PostbackUpdate(fineConversionValue: slot.device % 64, coarseConversionValue: .medium))
                    items.append(try JSONCoding.encoder.encode(body))
                }
            }
            // A batch is a JSON array of the objects the single routes take.
            var body = ByteBuffer()
            if batch > 1 { body.writeString("[") }
            for (position, item) in items.enumerated() {
                if position > 0 { body.writeString(",") }
                body.writeBytes(item)
            }
            if batch > 1 { body.writeString("]") }
            requests.append(
                LoadRequest(
                    kind: kind, batch: batch > 1, body: body, events: end - start, firstEvent: slots[start].index,
                    firstDevice: slots[start].device))
            start = end
        }
        return requests
    }

    /// An event's time: when it is due in the offer, counted from the plan's creation.
    private func eventTime(_ index: Int, from now: Milliseconds) -> Milliseconds {
        now + Milliseconds(Double(index) / Double(rate) * 1000)
    }

    /// One signed impression (compact JWS) per time, signed on every core: large offers sign hundreds
    /// of thousands.
    private func signedImpressions(_ times: [Milliseconds]) async throws -> [String] {
        let chunks = stride(from: 0, to: times.count, by: 2_000).map { Array(times[$0..<min(times.count, $0 + 2_000)]) }
        let (network, app, publisher, key) = (network, app, publisher, key)
        let signed = try await concurrentMap(chunks, limit: ProcessInfo.processInfo.activeProcessorCount) { chunk in
            try chunk.enumerated().map { offset, time in
                let payload = ImpressionPayload(
                    impressionIdentifier: UUID().uuidString, adNetworkIdentifier: network, advertisedItemIdentifier: app,
                    publisherItemIdentifier: publisher, sourceIdentifier: offset % 10_000, timestamp: time - 1_000)
                return try ImpressionSigning.sign(payload, with: key)
            }
        }
        return signed.flatMap { $0 }
    }
}
