/// One event of `GET /events` (Server-Sent Events, `text/event-stream`): what the server
/// writes and the device reads.
///
/// - `revision` (data `{"maxRevision":N}`, no `id`): the server is at revision `N`; a device
///   behind it syncs.
/// - `changes` (`id` the revision it brings the device to, data a sync response body
///   `{"maxRevision":M,"changeSets":[...]}`): the change sets committed after the previous
///   event; a device at exactly the revision before the first of them applies them.
///
/// - `wiped` (data the error body of `410 device_wiped`): the device's token was revoked with an
///   order to wipe it; the stream ends after it.
///
/// A line starting with `:` is a comment (the heartbeat).
public struct ServerSentEvent: Sendable, Hashable {
    public var name: String
    public var id: String?
    /// The `data` lines joined by `\n`.
    public var data: [UInt8]

    public init(name: String, id: String? = nil, data: [UInt8]) {
        self.name = name
        self.id = id
        self.data = data
    }

    /// The event `revision`: the server is at `revision`.
    public static func revision(_ revision: Revision) -> ServerSentEvent {
        ServerSentEvent(name: "revision", data: Array("{\"maxRevision\":\(revision)}".utf8))
    }

    /// The event `changes`: `response` is a sync response body (compact JSON, one line)
    /// ending at `revision`.
    public static func changes(_ response: [UInt8], revision: Revision) -> ServerSentEvent {
        ServerSentEvent(name: "changes", id: String(revision), data: response)
    }

    /// The event `wiped`: the device's token was revoked with an order to wipe the device.
    public static let wiped = ServerSentEvent(
        name: "wiped",
        data: Array(
            #"{"error":{"code":"device_wiped","message":"this device's token was revoked with an order to wipe it"}}"#.utf8))

    /// The event as it goes on the wire, blank line included. `data` must hold no line break
    /// (compact JSON holds none: the codec escapes them inside strings).
    public var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(data.count + name.utf8.count + 32)
        if let id { bytes += Array("id: \(id)\n".utf8) }
        bytes += Array("event: \(name)\ndata: ".utf8)
        bytes += data
        bytes += [10, 10]
        return bytes
    }

    /// A comment line: what keeps an idle stream alive and lets both sides notice a dead one.
    public static let heartbeat: [UInt8] = Array(": heartbeat\n\n".utf8)

    /// The `maxRevision` of the event's data (both kinds carry it first), without decoding the
    /// rest.
    public var maxRevision: Revision? {
        let prefix = Array("{\"maxRevision\":".utf8)
        guard data.count > prefix.count, Array(data[0..<prefix.count]) == prefix else { return nil }
        var value: Revision = 0
        var index = prefix.count
        while index < data.count, data[index] >= 48, data[index] <= 57, value < Revision.max / 10 {
            value = value * 10 + Revision(data[index] - 48)
            index += 1
        }
        return index > prefix.count ? value : nil
    }
}

/// Reads a `text/event-stream` incrementally: bytes in as they arrive, whole events out.
///
/// Follows the HTML standard's parsing rules: lines end with LF, CR or CRLF; `field: value`
/// (one space after the colon is dropped); comments start with `:`; an event is dispatched at
/// a blank line, if it has data. A line longer than `maxLineBytes` is a malformed stream.
public struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var name = ""
    private var id: String?
    private var data: [UInt8] = []
    private var hasData = false
    private var lastWasCR = false
    private let maxLineBytes: Int
    /// The `id` of the last event that had one (the stream's `Last-Event-ID`).
    public private(set) var lastEventID: String?

    public struct LineTooLong: Error, Sendable {}

    public init(maxLineBytes: Int = 64 << 20) {
        self.maxLineBytes = maxLineBytes
    }

    /// Feeds bytes; returns the events they complete, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) throws(LineTooLong) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if lastWasCR {
                lastWasCR = false
                if byte == 10 { continue }
            }
            if byte == 10 || byte == 13 {
                lastWasCR = byte == 13
                if let event = endOfLine() { events.append(event) }
            } else {
                guard line.count < maxLineBytes else { throw LineTooLong() }
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endOfLine() -> ServerSentEvent? {
        defer { line.removeAll(keepingCapacity: line.count < 1 << 16) }
        if line.isEmpty {
            defer {
                name = ""
                data = []
                hasData = false
            }
            guard hasData else { return nil }
            if let id { lastEventID = id }
            let event = ServerSentEvent(name: name.isEmpty ? "message" : name, id: id, data: data)
            id = nil
            return event
        }
        if line[0] == 58 { return nil }  // ":" comment
        let colon = line.firstIndex(of: 58) ?? line.count
        let field = String(decoding: line[0..<colon], as: UTF8.self)
        var valueStart = min(colon + 1, line.count)
        if valueStart < line.count && line[valueStart] == 32 { valueStart += 1 }
        let value = line[valueStart...]
        switch field {
        case "event": name = String(decoding: value, as: UTF8.self)
        case "data":
            if hasData { data.append(10) }
            data += value
            hasData = true
        case "id": id = String(decoding: value, as: UTF8.self)
        default: break
        }
        return nil
    }
}
