import AttributionModel

extension SKANImpression {
    /// Checks the fields, then the ad network's P-256 signature over `signedMessage`. Field problems are
    /// `invalidComponents`; a P-192 key is an `invalidKey` (only Apple's old postbacks used P-192).
    public func verifySignature(with publicKey: SKANPublicKey) throws(JWSError) {
        do {
            try validate()
        } catch {
            throw JWSError(.invalidComponents, error.description)
        }
        guard publicKey.curve == .p256 else {
            throw JWSError(.invalidKey, "SKAdNetwork 4.0 impressions are signed with P-256, not \(publicKey.curve.rawValue)")
        }
        try SKANSignature.verify(message: signedMessage, signatureBase64: signature, publicKey: publicKey)
    }
}
