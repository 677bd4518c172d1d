import CryptoPrimitives
import Foundation

extension JWKSet {
    /// Apple's published AdAttributionKit keys [Verifying a postback], each under its `kid`: production
    /// (`apple-cas-identifier/0`, the key of SKAdNetwork 2.1 and later too), development postbacks from
    /// end-to-end flows (`apple-development-identifier/0`) and postbacks made in developer settings
    /// (`apple-development-identifier/1`). The pipeline's own JWKS has the same three roles.
    public static let appleAdAttributionKit = JWKSet(keys: [
        apple("apple-cas-identifier/0", SKANPublicKey.applePublishedP256),
        apple(
            "apple-development-identifier/0",
            "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELeEDzpJEP+/qRSE5hJVC1p1J0ssUnQGMzBBbvnACBok8OVGGLgxL0myrKiy6lvRtSlLRsWit87i+vftD8AEqeQ=="
        ),
        apple(
            "apple-development-identifier/1",
            "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YzdO7eM97s/IJ25kdW5CZ3A14USE5IJ5Ha/vhWaxI6UBI1ZxCEvjrKxVluVGe6qWwF1BDFq+QHqKfH5u+wxHQ=="
        ),
    ])

    /// A key as Apple publishes it: base64 DER SubjectPublicKeyInfo. Constant text, so a failure is a typo here.
    private static func apple(_ keyID: String, _ base64DER: String) -> JWK {
        let key = try! P256.Signing.PublicKey(derRepresentation: Data(base64Encoded: base64DER)!)
        return JWK(publicKey: key, keyID: keyID)
    }
}
