import COpenSSL

/// What a TLS client trusts and presents.
public struct TLSClientConfiguration: Sendable, Hashable {
    public enum TrustRoots: Sendable, Hashable {
        /// The system's certificate store (Debian's ca-certificates).
        case system
        /// A PEM bundle of CA certificates (a private CA, a managed Redis's CA).
        case file(String)
    }

    public var trustRoots: TrustRoots
    /// A client certificate chain (PEM) and its key, for servers that demand one (mutual TLS).
    public var certificateChainFile: String?
    public var privateKeyFile: String?

    public init(trustRoots: TrustRoots = .system, certificateChainFile: String? = nil, privateKeyFile: String? = nil) {
        self.trustRoots = trustRoots
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
    }
}

/// A TLS failure, described as OpenSSL describes it (the certificate check's own reason first, such as
/// "certificate has expired" or "hostname mismatch", then the library's error queue).
public struct TLSClientError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) { self.description = description }

    /// `what` failed: the verify result, when the certificate check failed, and the error queue (emptied).
    static func openSSL(_ what: String, verifyResult: Int = Int(X509_V_OK)) -> TLSClientError {
        var reasons: [String] = []
        if verifyResult != Int(X509_V_OK), let text = X509_verify_cert_error_string(verifyResult) {
            reasons.append("certificate verify failed: \(String(cString: text))")
        }
        var code = ERR_get_error()
        while code != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            reasons.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            code = ERR_get_error()
        }
        return TLSClientError(reasons.isEmpty ? what : "\(what): \(reasons.joined(separator: "; "))")
    }
}

/// A configured OpenSSL client context (`SSL_CTX`): TLS 1.2 or later, the peer's certificate verified
/// against the trust roots, every connection's name (or address) checked against the certificate by
/// `TLSClientHandler`. Debian's OpenSSL (libssl-dev, the project's one cryptography library) rather
/// than swift-nio-ssl's copy of BoringSSL, whose compile was 40 % of a first build's CPU; Debian's
/// security updates reach it with the system's.
///
/// Sendable: OpenSSL allows one `SSL_CTX` to make connections on several threads once it is configured,
/// and nothing changes it after `init`.
public final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer

    public init(_ configuration: TLSClientConfiguration = TLSClientConfiguration()) throws {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSClientError.openSSL("SSL_CTX_new") }
        self.context = context
        guard copenssl_require_tls12(context) == 1 else { throw TLSClientError.openSSL("TLS 1.2 minimum") }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        switch configuration.trustRoots {
        case .system:
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw TLSClientError.openSSL("the system's trust roots")
            }
        case .file(let path):
            guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
                throw TLSClientError.openSSL("the CA bundle \(path)")
            }
        }
        switch (configuration.certificateChainFile, configuration.privateKeyFile) {
        case (nil, nil): break
        case (let chain?, let key?):
            guard SSL_CTX_use_certificate_chain_file(context, chain) == 1 else {
                throw TLSClientError.openSSL("the client certificate \(chain)")
            }
            guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
                throw TLSClientError.openSSL("the client key \(key)")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw TLSClientError.openSSL("the client key \(key) does not match the certificate \(chain)")
            }
        default:
            throw TLSClientError("a client certificate needs its key, and a key its certificate")
        }
    }

    deinit { SSL_CTX_free(context) }

    /// One connection's `SSL`, its identity to check set: a host name (sent as SNI and matched against
    /// the certificate's names) or, for an IP literal, the address (matched against its IP entries).
    func connection(serverHostname: String?, address: String?) throws -> OpaquePointer {
        guard let ssl = SSL_new(context) else { throw TLSClientError.openSSL("SSL_new") }
        do {
            if let serverHostname {
                guard copenssl_set_server_name(ssl, serverHostname) == 1, SSL_set1_host(ssl, serverHostname) == 1 else {
                    throw TLSClientError.openSSL("the server name \(serverHostname)")
                }
            } else if let address {
                guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), address) == 1 else {
                    throw TLSClientError.openSSL("the server address \(address)")
                }
            } else {
                // Nothing to check the certificate against: any certificate of any CA would do.
                throw TLSClientError("no server name or address to check the certificate against")
            }
            return ssl
        } catch {
            SSL_free(ssl)
            throw error
        }
    }
}
