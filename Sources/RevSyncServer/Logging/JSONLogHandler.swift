import Foundation
public import Logging
import RevSyncEngine
import RevSyncProtocol

/// A swift-log handler that writes one JSON object per line to standard error (`revsync-server
/// --log-format json`), for log collectors: `{"time", "level", "label", "message", ...the
/// metadata}`, every metadata value as a string (nested ones flattened with dots).
///
/// For example, the line of a request:
///
/// ```json
/// {"time":"2026-11-23T09:30:01.123Z","level":"info","label":"revsync","message":"request","method":"POST",
///  "path":"/sync","status":"200","duration_ms":"1.42","device":"ipad-3","bytes_in":"412","bytes_out":"230"}
/// ```
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .info
    private let label: String
    private let output: @Sendable ([UInt8]) -> Void

    /// - Parameter output: where each line goes (standard error by default).
    public init(label: String, output: (@Sendable ([UInt8]) -> Void)? = nil) {
        self.label = label
        self.output = output ?? { line in FileHandle.standardError.write(Data(line)) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = event.level
        let message = event.message
        let explicit = event.metadata
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit { all.merge(explicit) { _, new in new } }
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw("{\"time\":")
        writer.writeString(Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)))
        writer.writeRaw(",\"level\":")
        writer.writeString(level.rawValue)
        writer.writeRaw(",\"label\":")
        writer.writeString(label)
        writer.writeRaw(",\"message\":")
        writer.writeString(message.description)
        for (key, value) in Self.flattened(all).sorted(by: { $0.key < $1.key })
        where !["time", "level", "label", "message"].contains(key) {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeString(key)
            writer.writeByte(UInt8(ascii: ":"))
            writer.writeString(value)
        }
        writer.writeRaw("}\n")
        output(writer.bytes)
    }

    private static func flattened(_ metadata: Logger.Metadata, prefix: String = "") -> [String: String] {
        var flat: [String: String] = [:]
        for (key, value) in metadata {
            let name = prefix.isEmpty ? key : "\(prefix).\(key)"
            switch value {
            case .dictionary(let nested): flat.merge(flattened(nested, prefix: name)) { _, new in new }
            case .array(let items): flat[name] = items.map(\.description).joined(separator: ",")
            default: flat[name] = value.description
            }
        }
        return flat
    }
}
