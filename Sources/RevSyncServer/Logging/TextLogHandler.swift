public import Logging
import RevSyncEngine
import RevSyncProtocol

/// swift-log's text format on standard error (`revsync-server --log-format text`, the
/// default), with every message and metadata value escaped for the terminal
/// (``TerminalText``): a device named `"tablet\nrevsync: all good"` cannot forge a line of the
/// log, nor a record's value send escape sequences to the operator's terminal.
public struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler

    public init(label: String) {
        stream = StreamLogHandler.standardError(label: label)
    }

    public var metadata: Logger.Metadata {
        get { stream.metadata }
        set { stream.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    public var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { stream[metadataKey: key] }
        set { stream[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var provided = self.metadata
        if let fromProvider = metadataProvider?.get() { provided.merge(fromProvider) { _, new in new } }
        if let metadata = event.metadata { provided.merge(metadata) { _, new in new } }
        var escaping = stream
        escaping.metadata = [:]
        escaping.metadataProvider = nil
        var escaped = event
        escaped.message = "\(TerminalText.escaped(event.message.description))"
        escaped.metadata = provided.mapValues(Self.escaped)
        escaping.log(event: escaped)
    }

    static func escaped(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(TerminalText.escaped(text))
        case .stringConvertible(let convertible): .string(TerminalText.escaped(convertible.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
