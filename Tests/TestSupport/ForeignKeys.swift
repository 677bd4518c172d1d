/// Keys on curves the pipeline refuses, made once with OpenSSL, for the tests that check the refusal.
public enum ForeignKeys {
    /// A P-384 public key (`openssl ecparam -name secp384r1 -genkey | openssl ec -pubout`).
    public static let p384PublicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEWbAwJYVSs0rNcXQwNJF7A3b40r+F4RHx
        xrIO/nqDJ8TyntEaeWyHPF3hQbxkleqznL3sOiA95MH/4GNXdVS2u5B4xsYLfxG7
        3K2HoP++ArV3Glsr3SS6XmiCOnY4aD8U
        -----END PUBLIC KEY-----
        """

    /// The same key as base64 DER SubjectPublicKeyInfo.
    public static var p384SPKIBase64: String {
        p384PublicKeyPEM.split(separator: "\n").dropFirst().dropLast().joined()
    }
}
