import ArgumentParser
import AttributionModel
import Foundation
import NIOCore
import NIOHTTP1
import RedisStreams
import ToolSupport

/// Where the admin API is and its token: every `attribution admin` command takes these.
struct AdminOptions: ParsableArguments {
    @Option(help: "The admin service's base URL.")
    var adminURL = "http://127.0.0.1:8081"

    @Option(help: "A file holding the admin token (compose: the admin-token secret). Default: $ADMIN_TOKEN_FILE.")
    var adminTokenFile: String?

    @Flag(help: "Print answers as they came (compact JSON), not indented.")
    var raw = false

    func validate() throws {
        try HTTPURLValidation.check(adminURL, flag: "--admin-url")
    }

    /// The token: from `--admin-token-file`, else the file `$ADMIN_TOKEN_FILE` names, else `$ADMIN_TOKEN`.
    /// Never a flag of its own: a command line is visible to every user of the machine (`ps`).
    func token(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        if let file = adminTokenFile ?? environment["ADMIN_TOKEN_FILE"] {
            guard let token = RedisConfiguration.password(fromFile: file), !token.isEmpty else {
                throw ValidationError("cannot read an admin token from \(file)")
            }
            return token
        }
        if let token = environment["ADMIN_TOKEN"], !token.isEmpty { return token }
        throw ValidationError("no admin token: give --admin-token-file FILE, or set ADMIN_TOKEN_FILE or ADMIN_TOKEN")
    }
}

/// One admin request: sent, its answer printed on standard output; an answer other than 2xx fails the
/// command with the problem's status, reason and detail (RFC 9457), as the admin API wrote them.
struct AdminClient {
    let options: AdminOptions

    /// A request body: JSON, or an app's Info.plist (XML) for an advertised app.
    struct Body {
        var bytes: Data
        var contentType: String

        static func json(_ value: some Encodable) throws -> Body {
            Body(bytes: try JSONCoding.encoder.encode(value), contentType: "application/json")
        }

        /// A file's bytes (`-`: standard input); XML when it starts with `<`, else JSON.
        static func file(_ path: String) throws -> Body {
            let bytes = try AdminClient.read(path)
            let first = bytes.first { !Character(UnicodeScalar($0)).isWhitespace }
            return Body(bytes: bytes, contentType: first == UInt8(ascii: "<") ? "application/xml" : "application/json")
        }
    }

    /// A file's bytes, `-` standard input's; a file that cannot be read fails the command.
    static func read(_ path: String) throws -> Data {
        if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let bytes = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        return bytes
    }

    static let timeout: Duration = .seconds(30)
    static let maximumAnswerBytes = 16 << 20

    /// Sends `method path` (a path under the admin API, with its identifiers already in it) and prints
    /// the answer.
    func send(_ method: HTTPMethod, _ path: String, _ body: Body? = nil) async throws {
        let token = try options.token()
        let url = options.adminURL.trimmingSuffix("/") + path
        var headers = [("Authorization", "Bearer \(token)")]
        if let body { headers.append(("Content-Type", body.contentType)) }
        let response: ToolHTTPClient.Response
        do {
            response = try await ToolHTTPClient().send(
                method, url, headers: headers, body: body.map { ByteBuffer(data: $0.bytes) }, timeout: Self.timeout,
                maximumAnswerBytes: Self.maximumAnswerBytes)
        } catch {
            throw CommandError("\(method.rawValue) \(url): \(error)")
        }
        let text = String(buffer: response.body)
        guard (200..<300).contains(response.status) else {
            throw CommandError(Self.failure(status: response.status, body: text))
        }
        print(options.raw ? text : Self.indented(text))
    }

    /// One line for a refused request: `404 unknown-ad-network: …` from problem JSON, else the body.
    static func failure(status: Int, body: String) -> String {
        guard let problem = try? JSONDecoder().decode(ProblemDetails.self, from: Data(body.utf8)) else {
            return "\(status): \(body.isEmpty ? "(no body)" : body)"
        }
        return "\(status) \(problem.reason): \(problem.detail)"
    }

    /// JSON indented with sorted keys, as a reader wants it; anything else as it came.
    static func indented(_ text: String) -> String {
        guard let value = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
            let data = try? JSONSerialization.data(
                withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])
        else { return text }
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }

    /// A path segment: identifiers are sent percent-encoded, so a `/` in one cannot reach another route.
    var pathSegment: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? self
    }
}
