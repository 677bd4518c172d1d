import AttributionModel
import Foundation
import HTTPAPI
import Hummingbird
import RedisStreams
import ServiceRuntime

/// `POST /v1/conversion-values/evaluate`: an SDK asks, with its app's key, for the value it would
/// report next under the app's conversion-value schema (read-only: nothing is stored or sent).
struct EvaluationRoutes {
    let redis: RedisConnection
    let maxBodyBytes: Int
    let appKeys: AppKeyOwners

    var schemas: ValueSchemas { ValueSchemas(redis: redis) }

    func add(to router: Router<BasicRequestContext>, catalog: RouteCatalog) {
        catalog.on(router, .post, "/v1/conversion-values/evaluate") { request, _ in
            try EventRoutes.requireAppKey(request)
            let input = try Request.decodeJSON(
                IngestRequests.EvaluationRequest.self, from: try await request.collectBody(limit: maxBodyBytes))
            let owner = try await appKeys.owner(of: request.bearerToken ?? "")
            if let refusal = AppKeyOwners.refusal(owner: owner, item: input.advertisedItemIdentifier) { throw refusal }
            try input.validate()
            let item = input.advertisedItemIdentifier
            let json =
                if let version = input.version { try await schemas.stored(item, version: version) } else {
                    try await schemas.current(item)
                }
            let schema = try JSONCoding.decoder.decode(ConversionValueSchema.self, from: Data(json))
            let evaluation = schema.evaluate(window: input.window, totals: input.totals, previous: input.previous)
            var reply: [String: Any] = ["version": schema.version ?? 0, "changed": evaluation.changed]
            if let value = evaluation.value {
                reply["fineConversionValue"] = value.fine
                reply["coarseConversionValue"] = value.coarse.rawValue
                reply["lockPostback"] = value.lock
            }
            return try JSONAnswer.object(reply)
        }
    }
}
