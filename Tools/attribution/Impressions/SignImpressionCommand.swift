import ArgumentParser
import AttributionCrypto
import AttributionModel
import CryptoPrimitives
import Foundation
import ServiceRuntime

/// `attribution sign-impression`: what an ad network's server does for each ad it serves.
struct SignImpressionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign-impression",
        abstract: "Sign an AdAttributionKit impression and print it as a compact JWS (ES256, kid = ad network id)."
    )

    @Option(help: "The ad network's private key (PEM), as written by `attribution keygen`.")
    var key: String

    @Option(help: "Lowercase ad network id; becomes the JWS kid and `ad-network-identifier`.")
    var adNetwork: String

    @Option(parsing: .unconditional, help: "Item id of the advertised app.")
    var advertisedItem: ItemIdentifier

    @Option(parsing: .unconditional, help: "Item id of the app showing the ad; 0 marks a development impression.")
    var publisherItem: ItemIdentifier

    @Option(parsing: .unconditional, help: "Campaign id, 0–9999 (SKAN 4 hierarchical source id).")
    var sourceIdentifier: Int

    @Option(parsing: .unconditional, help: "When the impression was created, in milliseconds since 1970 (default: now).")
    var timestamp: Milliseconds?

    @Option(help: "Impression UUID, the replay key (default: a random UUID).")
    var impressionIdentifier: String?

    @Flag(name: .customLong("eligible-for-re-engagement"), help: "Let the impression drive a re-engagement.")
    var eligibleForReengagement = false

    /// Anything below this is surely seconds, not milliseconds (it is March 1973 in ms).
    static let smallestPlausibleTimestamp: Milliseconds = 100_000_000_000

    func validate() throws {
        guard AdNetworkIdentifier(adNetwork) != nil else {
            throw ValidationError(
                "--ad-network must be lowercase letters, digits, '.', '-' or '_' (e.g. example.adattributionkit); not \(adNetwork)"
            )
        }
        guard SourceIdentifier.range.contains(sourceIdentifier) else {
            throw ValidationError("--source-identifier must be within 0–9999 (up to four digits); not \(sourceIdentifier)")
        }
        if let timestamp, timestamp < Self.smallestPlausibleTimestamp {
            throw ValidationError("--timestamp is in milliseconds since 1970; \(timestamp) looks like seconds")
        }
        if let impressionIdentifier, UUID(uuidString: impressionIdentifier) == nil {
            throw ValidationError("--impression-identifier must be a UUID; not \(impressionIdentifier)")
        }
    }

    func run() throws {
        guard let pem = try? String(contentsOfFile: key, encoding: .utf8) else {
            throw CommandError("cannot read --key \(key): no readable text file there")
        }
        let privateKey: P256.Signing.PrivateKey
        do {
            privateKey = try SigningKey.load(pem: pem)
        } catch {
            throw CommandError("--key \(key) is not a P-256 private key in PEM form (\(error.reason))")
        }
        guard let network = AdNetworkIdentifier(adNetwork) else { return }  // checked in validate()
        let payload = ImpressionPayload(
            impressionIdentifier: impressionIdentifier ?? UUID().uuidString, adNetworkIdentifier: network,
            advertisedItemIdentifier: advertisedItem, publisherItemIdentifier: publisherItem,
            sourceIdentifier: sourceIdentifier, timestamp: timestamp ?? WallClock.nowMilliseconds(),
            // Omitted rather than false when not set: the spec lists the key as optional.
            eligibleForReengagement: eligibleForReengagement ? true : nil)
        print(try ImpressionSigning.sign(payload, with: privateKey))
    }
}
