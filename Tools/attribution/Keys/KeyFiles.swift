import CryptoPrimitives
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key file layout every subcommand shares: `<dir>/<name>.private.pem` (0600, PKCS#8) and
/// `<dir>/<name>.public.pem` (SubjectPublicKeyInfo, what the admin API accepts as `public-key`).
enum KeyFiles {
    struct Paths {
        var privateKey: String
        var publicKey: String
    }

    struct WriteError: Error, CustomStringConvertible {
        var description: String
    }

    /// Names are key ids and file names: letters, digits, `.`, `-`, `_`, and `/` as in Apple's
    /// `apple-cas-identifier/0` (written as `_` in the file name).
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.hasPrefix("/") && !name.contains("..")
            && name.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (CharacterSet.alphanumerics.contains(scalar) || ".-_/".unicodeScalars.contains(scalar))
            }
    }

    static func paths(name: String, directory: String) -> Paths {
        let fileName = name.replacingOccurrences(of: "/", with: "_")
        let base = URL(fileURLWithPath: directory).appendingPathComponent(fileName).path
        return Paths(privateKey: base + ".private.pem", publicKey: base + ".public.pem")
    }

    /// Writes both files, creating `directory` if needed. Without `overwrite`, an existing private
    /// key is never replaced: losing it would orphan every impression signed with it.
    @discardableResult
    static func write(_ key: P256.Signing.PrivateKey, name: String, directory: String, overwrite: Bool) throws -> Paths {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let paths = paths(name: name, directory: directory)
        try writeFile(paths.privateKey, contents: key.pemRepresentation + "\n", mode: 0o600, overwrite: overwrite)
        try writeFile(paths.publicKey, contents: key.publicKey.pemRepresentation + "\n", mode: 0o644, overwrite: overwrite)
        return paths
    }

    /// open(2) with the final mode, so the private key is never readable by others, not even for a moment.
    static func writeFile(_ path: String, contents: String, mode: mode_t, overwrite: Bool) throws {
        let flags = O_WRONLY | O_CREAT | (overwrite ? O_TRUNC : O_EXCL)
        let fd = open(path, flags, mode)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw WriteError(description: "\(path) already exists; pass --force to replace it")
            }
            throw WriteError(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        // An existing file keeps its old mode through O_TRUNC: set it explicitly.
        guard fchmod(fd, mode) == 0 else {
            throw WriteError(description: "cannot set permissions of \(path): \(String(cString: strerror(errno)))")
        }
        try handle.write(contentsOf: Data(contents.utf8))
    }
}
