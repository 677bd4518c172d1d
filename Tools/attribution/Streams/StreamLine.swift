import AttributionModel
import Foundation
import RedisStreams

/// One stream entry as the JSON line `attribution stream` prints.
enum StreamLine {
    /// The line of one entry: its stream key and id, the form its message is stored in (`stored`:
    /// `json`, or one of 0.1.0's binary forms, `compact` and `held-postback`), the message as the JSON
    /// envelope (a JSON message exactly as stored; a binary one as this version encodes what it
    /// decodes), its other fields as text; or, for a message this version cannot read, why and its
    /// bytes in base64.
    static func object(_ read: StreamReader.Read) -> [String: Any] {
        var fields = read.entry.fieldMap
        var line: [String: Any] = ["stream": read.key, "entry": read.entry.id]
        if let bytes = fields.removeValue(forKey: "e")?.bytes {
            let stored = Envelope.StoredForm(bytes)
            do {
                let envelope = try Envelope.decode(bytes)
                line["stored"] = stored.rawValue
                line["message"] = try JSONSerialization.jsonObject(with: Data(stored == .json ? bytes : try envelope.encoded()))
            } catch {
                line["undecodable"] = "\(error)"
                line["raw"] = Data(bytes).base64EncodedString()
            }
        }
        if !fields.isEmpty {
            line["fields"] = fields.mapValues { reply -> Any in
                reply.string ?? reply.bytes.map { ["base64": Data($0).base64EncodedString()] } ?? NSNull()
            }
        }
        return line
    }

    /// Prints the entry's line on standard output.
    static func print(_ read: StreamReader.Read) {
        let data =
            (try? JSONSerialization.data(withJSONObject: object(read), options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
