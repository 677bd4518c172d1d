/// SKAdNetwork 4.0 postbacks for SKAdNetwork winners and runners-up (spec section 6), and the way back
/// to the fields every postback shares, so receivers handle both kinds alike.
extension SKANPostback {
    /// The unsigned 4.0 postback for an order: the same gated fields as the AdAttributionKit payload,
    /// spelled the SKAdNetwork way (`transaction-id` is the postback identifier, `source-app-id` the
    /// publisher app, `fidelity-type` 1 for a click). The signer fills `attribution-signature`.
    public init(order: PostbackOrder) {
        let payload = order.payload
        self.init(
            version: .v4, adNetworkIdentifier: payload.adNetworkIdentifier.rawValue,
            sourceIdentifier: payload.sourceIdentifier, appIdentifier: payload.advertisedItemIdentifier,
            transactionIdentifier: payload.postbackIdentifier, redownload: payload.conversionType == .redownload,
            sourceAppIdentifier: payload.publisherItemIdentifier, fidelityType: order.adInteractionType == .click ? 1 : 0,
            didWin: payload.didWin, postbackSequenceIndex: payload.postbackSequenceIndex,
            conversionValue: order.conversionValue, coarseConversionValue: order.coarseConversionValue,
            countryCode: order.countryCode)
    }

    /// The fields an AdAttributionKit payload would carry: the transaction id as postback identifier, a
    /// redownload flag as the conversion type (SKAdNetwork has no re-engagement), `source-app-id` as the
    /// publisher. The marketplace is never sent by SKAdNetwork.
    public var commonPayload: PostbackPayload? {
        guard let network = AdNetworkIdentifier(adNetworkIdentifier) else { return nil }
        return PostbackPayload(
            impressionType: "skadnetwork", adNetworkIdentifier: network,
            sourceIdentifier: sourceIdentifier ?? campaignIdentifier.map { String($0) } ?? "",
            advertisedItemIdentifier: appIdentifier, publisherItemIdentifier: sourceAppIdentifier,
            conversionType: redownload == true ? .redownload : .download, marketplaceIdentifier: nil,
            postbackIdentifier: transactionIdentifier, postbackSequenceIndex: postbackSequenceIndex ?? 0,
            didWin: didWin ?? true)
    }
}
