public import Logging
import RevSyncProtocol

/// The log lines of a live server, kept for tests to read (and printed from `warning` up, as
/// the server would).
public final class LogCapture: Sendable {
    public struct Line: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: [String: String]

        /// The message and its metadata, as one text.
        public var text: String {
            message + " " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
    }

    private let lines = Locked<[Line]>([])

    public init() {}

    public var all: [Line] { lines.current }

    /// A logger writing here, at `level` and above.
    public func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "revsync-test") { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    fileprivate func add(_ line: Line) {
        lines.withLock { $0.append(line) }
        if line.level >= .warning { print("[\(line.level)] \(line.text)") }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            capture.add(Line(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" }))
        }
    }
}
