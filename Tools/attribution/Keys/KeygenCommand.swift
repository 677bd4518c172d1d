import ArgumentParser
import AttributionCrypto
import AttributionModel

/// `attribution keygen`: a P-256 key pair for an ad network (kid = its id) or for the pipeline.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate a P-256 (ES256) key pair and print the public key as a JWK.",
        discussion: """
            Writes <out>/<id>.private.pem (mode 0600) and <out>/<id>.public.pem, and prints the public \
            JWK (kid = the ad network id or --name) on stdout. Register the public key with \
            PUT /v1/admin/ad-networks/<id>; give the private key to `sign-impression`.
            """
    )

    @Option(help: "Lowercase ad network id, e.g. example.adattributionkit. The key signs its impressions.")
    var adNetwork: String?

    @Option(
        help: """
            Key id of the pipeline's own postback signing key, e.g. attribution-pipeline/0 (instead of \
            --ad-network; '/' becomes '_' in file names).
            """)
    var name: String?

    @Option(help: "Directory for the key files (created if missing).")
    var out: String

    @Flag(help: "Replace existing key files.")
    var force = false

    func validate() throws {
        switch (adNetwork, name) {
        case (nil, nil):
            throw ValidationError("give --ad-network <id> for an ad network key or --name <name> for the pipeline's key")
        case (.some, .some):
            throw ValidationError("--ad-network and --name are exclusive: one key per run")
        case (.some(let id), nil):
            guard AdNetworkIdentifier(id) != nil else {
                throw ValidationError(
                    "--ad-network must be lowercase letters, digits, '.', '-' or '_' (e.g. example.adattributionkit); not \(id)")
            }
        case (nil, .some(let name)):
            guard KeyFiles.isValidName(name) else {
                throw ValidationError(
                    "--name must be letters, digits, '.', '-', '_' or '/' (e.g. attribution-pipeline/0); not \(name)")
            }
        }
    }

    func run() throws {
        let keyID = adNetwork ?? name ?? ""
        let key = SigningKey.generate()
        let paths = try KeyFiles.write(key, name: keyID, directory: out, overwrite: force)
        printError("wrote \(paths.privateKey) (0600) and \(paths.publicKey)")
        print(JWK(publicKey: key.publicKey, keyID: keyID).jsonString)
    }
}
