import TLSClient

extension RedisConfiguration {
    /// A TLS setting beside the URL: the services' `REDIS_TLS_*` keys, the tools' `--redis-tls-*` options.
    public enum TLSSetting: Sendable {
        case caFile, certificateFile, keyFile, serverName
    }

    /// Why the TLS settings cannot be used, and which setting is at fault.
    public struct TLSProblem: Error, Sendable {
        public let setting: TLSSetting
        public let message: String
    }

    /// Applies the TLS settings given beside a `rediss://` URL and loads them now, so that a missing or
    /// unreadable file, a certificate without its key or a key that does not match its certificate
    /// stops a service at start rather than at its first connection. Any of them with a `redis://`
    /// URL is refused: a CA file never turns TLS on by itself, nor is it silently ignored.
    public mutating func applyTLS(
        caFile: String?, certificateFile: String?, keyFile: String?, serverName: String?
    ) throws(TLSProblem) {
        guard var tls else {
            let given: [(TLSSetting, String?)] = [
                (.caFile, caFile), (.certificateFile, certificateFile), (.keyFile, keyFile), (.serverName, serverName),
            ]
            if let (setting, _) = given.first(where: { $0.1 != nil }) {
                throw TLSProblem(setting: setting, message: "applies to TLS only: the Redis URL must start with rediss://")
            }
            return
        }
        if let caFile { tls.trustRoots = .file(caFile) }
        do { _ = try TLSClientContext(tls) } catch {
            throw TLSProblem(setting: .caFile, message: "\(error)")
        }
        switch (certificateFile, keyFile) {
        case (nil, nil): break
        case (nil, _?): throw TLSProblem(setting: .keyFile, message: "a client key needs its certificate (the certificate file)")
        case (_?, nil): throw TLSProblem(setting: .certificateFile, message: "a client certificate needs its key (the key file)")
        case (let certificate?, let key?):
            tls.certificateChainFile = certificate
            tls.privateKeyFile = key
            do { _ = try TLSClientContext(tls) } catch {
                throw TLSProblem(setting: "\(error)".contains("client key") ? .keyFile : .certificateFile, message: "\(error)")
            }
        }
        if let serverName, serverName.isEmpty || serverName.contains(where: { $0 == " " || $0 == "/" }) {
            throw TLSProblem(setting: .serverName, message: "must be a host name, got \"\(serverName)\"")
        }
        self.tls = tls
        self.tlsServerName = serverName
    }
}
