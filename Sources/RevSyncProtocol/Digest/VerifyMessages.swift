/// How a verification narrows a difference down (`POST /verify`).
public enum VerificationShape {
    /// The parts a range that differs is split into.
    public static let fanout = 128
    /// A part this small (on the server) is listed by the device record by record.
    public static let leaf = 128
}

/// Records of one entity by ID: `from <= id < to`, `nil` for no bound.
public struct DigestRange: Sendable, Hashable, CustomStringConvertible {
    public var entity: String
    public var from: Int64?
    public var to: Int64?

    public init(entity: String, from: Int64? = nil, to: Int64? = nil) {
        self.entity = entity
        self.from = from
        self.to = to
    }

    public func contains(_ id: RecordID) -> Bool {
        (from.map { id.rawValue >= $0 } ?? true) && (to.map { id.rawValue < $0 } ?? true)
    }

    /// Every record of the entity.
    public var isWhole: Bool { from == nil && to == nil }

    public var description: String { "\(entity) [\(from.map(String.init) ?? "…"), \(to.map(String.init) ?? "…"))" }
}

/// A range and the digest of its records.
public struct RangeDigest: Sendable, Hashable {
    public var range: DigestRange
    public var digest: DigestSum

    public init(range: DigestRange, digest: DigestSum) {
        self.range = range
        self.digest = digest
    }
}

/// A range listed record by record: each record's ID and hash.
public struct RangeItems: Sendable, Hashable {
    public var range: DigestRange
    public var records: [RecordID: RecordHash]

    public init(range: DigestRange, records: [RecordID: RecordHash]) {
        self.range = range
        self.records = records
    }
}

/// A device's side of a verification (`POST /verify`): everything is at `revision`, which must
/// be the server's current one.
///
/// ```json
/// {"revision": 812, "report": "52000:…",
///  "ranges": [{"entity": "players", "from": null, "to": null, "digest": "1200:…"}],
///  "items": [{"entity": "players", "from": 300, "to": 340, "records": [[301, "…"], [302, "…"]]}]}
/// ```
///
/// `report` is the digest of every record the device holds at `revision` (the server says
/// whether it is its own, and remembers it); `ranges` asks which ranges differ, the device's
/// digest of each given; `items` lists the device's records of small ranges, which the server
/// answers with the records that differ.
public struct VerifyRequest: Sendable, Hashable {
    public var revision: Revision
    public var report: DigestSum?
    public var ranges: [RangeDigest]
    public var items: [RangeItems]

    public init(revision: Revision, report: DigestSum? = nil, ranges: [RangeDigest] = [], items: [RangeItems] = []) {
        self.revision = revision
        self.report = report
        self.ranges = ranges
        self.items = items
    }
}

/// The server's side: for each range that differs, its parts (contiguous, covering the range,
/// each with the server's digest); for listed ranges, a change set at `revision` with the
/// records the device must write (`update`) and the IDs it must drop (`delete`).
///
/// ```json
/// {"revision": 812, "verified": false,
///  "ranges": [{"entity": "players", "from": null, "to": null, "parts": [{"from": null, "to": 310, "digest": "600:…"}, …]}],
///  "repair": {"revision": 812, "types": ["players"], "players": {"create": [], "update": [301], "delete": [302], "attributes": {…}}}}
/// ```
public struct VerifyResponse: Sendable, Hashable {
    public struct Split: Sendable, Hashable {
        public var range: DigestRange
        public var parts: [RangeDigest]

        public init(range: DigestRange, parts: [RangeDigest]) {
            self.range = range
            self.parts = parts
        }
    }

    public var revision: Revision
    /// Whether the request's `report` is the server's digest (`nil`: no report).
    public var verified: Bool?
    /// The ranges that differ, split.
    public var ranges: [Split]
    public var repair: ChangeSet?
    /// The listed ranges, or their ends, the repair did not reach: an answer carries at most
    /// the server's cap of records, and the device lists these again in its next round.
    public var unanswered: [DigestRange] = []

    public init(revision: Revision, verified: Bool? = nil, ranges: [Split] = [], repair: ChangeSet? = nil) {
        self.revision = revision
        self.verified = verified
        self.ranges = ranges
        self.repair = repair
    }
}

// MARK: JSON

extension DigestRange {
    /// `"from":…,"to":…`.
    fileprivate func writeBounds(into writer: inout JSONWriter) {
        writer.writeRaw("\"from\":")
        if let from { writer.writeInteger(from) } else { writer.writeNull() }
        writer.writeRaw(",\"to\":")
        if let to { writer.writeInteger(to) } else { writer.writeNull() }
    }

    /// `{"entity":…,"from":…,"to":…`: an object about the range, its other members to follow.
    fileprivate func writeOpening(into writer: inout JSONWriter) {
        writer.writeRaw("{\"entity\":")
        writer.writeString(entity)
        writer.writeByte(UInt8(ascii: ","))
        writeBounds(into: &writer)
    }
}

extension VerifyRequest {
    /// The request's JSON.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + ranges.count * 80 + items.reduce(0) { $0 + $1.records.count * 48 })
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(revision)
        if let report {
            writer.writeRaw(",\"report\":")
            writer.writeString(report.description)
        }
        writer.writeRaw(",\"ranges\":[")
        for (index, range) in ranges.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            range.range.writeOpening(into: &writer)
            writer.writeRaw(",\"digest\":")
            writer.writeString(range.digest.description)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"items\":[")
        for (index, items) in items.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            items.range.writeOpening(into: &writer)
            writer.writeRaw(",\"records\":[")
            for (position, (id, hash)) in items.records.sorted(by: { $0.key < $1.key }).enumerated() {
                if position > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeByte(UInt8(ascii: "["))
                writer.writeInteger(id.rawValue)
                writer.writeByte(UInt8(ascii: ","))
                writer.writeString(hash.description)
                writer.writeByte(UInt8(ascii: "]"))
            }
            writer.writeRaw("]}")
        }
        writer.writeRaw("]}")
        return writer.bytes
    }

    /// Decodes a request: at most `maxRanges` ranges and item lists, and `maxItems` records
    /// listed in all.
    ///
    /// - Throws: ``ProtocolError`` naming what is wrong.
    public init(json: [UInt8], maxRanges: Int, maxItems: Int) throws(ProtocolError) {
        self = try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try WireDecoder(sender: .client).decode(buffer) { _, reader in
                var revision: Revision?
                var request = VerifyRequest(revision: 0)
                var listed = 0
                func shape(_ message: String, _ path: String = "") -> ProtocolError { ProtocolError(.invalidShape, message, path: path) }
                try reader.readObject { reader, key in
                    switch key {
                    case "revision":
                        let value = try reader.readInteger()
                        guard value >= 0 else { throw shape("revision is 0 or more", "revision") }
                        revision = value
                    case "report":
                        guard let sum = DigestSum(try reader.readString()) else {
                            throw shape("report is a digest, \"count:32 hex digits\"", "report")
                        }
                        request.report = sum
                    case "ranges":
                        try reader.readArray { reader, index in
                            let path = "ranges[\(index)]"
                            guard index < maxRanges else { throw shape("at most \(maxRanges) ranges", "ranges") }
                            var digest: DigestSum?
                            let range = try Self.readRange(&reader, path: path) { reader, key in
                                guard key == "digest", let sum = DigestSum(try reader.readString()) else {
                                    throw shape("a range has entity, from, to and digest (\"count:32 hex digits\")", path)
                                }
                                digest = sum
                            }
                            guard let digest else { throw shape("a range has a digest", path) }
                            request.ranges.append(RangeDigest(range: range, digest: digest))
                        }
                    case "items":
                        try reader.readArray { reader, index in
                            let path = "items[\(index)]"
                            guard index < maxRanges else { throw shape("at most \(maxRanges) item lists", "items") }
                            var hashes: [RecordID: RecordHash] = [:]
                            var seen = false
                            let range = try Self.readRange(&reader, path: path) { reader, key in
                                guard key == "records" else { throw shape("an item list has entity, from, to and records", path) }
                                seen = true
                                try reader.readArray { reader, _ in
                                    listed += 1
                                    guard listed <= maxItems else { throw shape("at most \(maxItems) records are listed at once", path) }
                                    var id: Int64?
                                    var hash: RecordHash?
                                    try reader.readArray { reader, position in
                                        switch position {
                                        case 0: id = try reader.readInteger()
                                        case 1: hash = RecordHash(hex: try reader.readString())
                                        default: throw shape("a record is [id, hash]", path)
                                        }
                                    }
                                    guard let id, let hash, hashes.updateValue(hash, forKey: RecordID(id)) == nil else {
                                        throw shape("each record is [id, \"32 hex digits\"], once", path + ".records")
                                    }
                                }
                            }
                            guard seen else { throw shape("an item list has records", path) }
                            guard hashes.keys.allSatisfy(range.contains) else {
                                throw shape("a listed record lies outside its range", path)
                            }
                            request.items.append(RangeItems(range: range, records: hashes))
                        }
                    default:
                        throw shape("unknown key \"\(key.prefix(80))\"")
                    }
                }
                guard let revision else { throw shape("missing \"revision\"") }
                request.revision = revision
                return request
            }
        }
    }

    /// A range's `entity`, `from` and `to`; its other members go to `other`.
    fileprivate static func readRange(
        _ reader: inout JSONReader, path: String, withEntity: Bool = true, other: (inout JSONReader, String) throws -> Void
    ) throws -> DigestRange {
        var entity: String?
        var from: Int64?
        var to: Int64?
        try reader.readObject { reader, key in
            switch key {
            case "entity": entity = try reader.readString()
            case "from", "to":
                let bound: Int64? =
                    try reader.peekKind() == .null
                    ? {
                        try reader.readNull()
                        return nil
                    }() : try reader.readInteger()
                if key == "from" { from = bound } else { to = bound }
            default: try other(&reader, key)
            }
        }
        guard !withEntity || !(entity ?? "").isEmpty else { throw ProtocolError(.invalidShape, "a range names its entity", path: path) }
        if let from, let to, from >= to { throw ProtocolError(.invalidShape, "from must be below to", path: path) }
        return DigestRange(entity: entity ?? "", from: from, to: to)
    }
}

extension VerifyResponse {
    /// The response's JSON.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + ranges.reduce(0) { $0 + $1.parts.count * 80 })
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(revision)
        if let verified {
            writer.writeRaw(",\"verified\":")
            writer.writeBool(verified)
        }
        writer.writeRaw(",\"ranges\":[")
        for (index, split) in ranges.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            split.range.writeOpening(into: &writer)
            writer.writeRaw(",\"parts\":[")
            for (position, part) in split.parts.enumerated() {
                if position > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeByte(UInt8(ascii: "{"))
                part.range.writeBounds(into: &writer)
                writer.writeRaw(",\"digest\":")
                writer.writeString(part.digest.description)
                writer.writeByte(UInt8(ascii: "}"))
            }
            writer.writeRaw("]}")
        }
        writer.writeByte(UInt8(ascii: "]"))
        if let repair {
            writer.writeRaw(",\"repair\":")
            repair.encode(into: &writer)
        }
        if !unanswered.isEmpty {
            writer.writeRaw(",\"unanswered\":[")
            for (index, range) in unanswered.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                range.writeOpening(into: &writer)
                writer.writeByte(UInt8(ascii: "}"))
            }
            writer.writeByte(UInt8(ascii: "]"))
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// Decodes the server's answer.
    ///
    /// - Throws: ``ProtocolError`` naming what is wrong.
    public init(json: [UInt8]) throws(ProtocolError) {
        self = try json.withUnsafeBufferPointer { buffer throws(ProtocolError) in
            try WireDecoder(sender: .server).decode(buffer) { decoder, reader in
                var response = VerifyResponse(revision: -1)
                try reader.readObject { reader, key in
                    switch key {
                    case "revision": response.revision = try reader.readInteger()
                    case "verified": response.verified = try reader.readBool()
                    case "ranges":
                        try reader.readArray { reader, index in
                            var parts: [RangeDigest] = []
                            var partRanges: [(DigestRange, DigestSum)] = []
                            let range = try VerifyRequest.readRange(&reader, path: "ranges[\(index)]") { reader, key in
                                guard key == "parts" else { return try reader.skipValue() }
                                try reader.readArray { reader, position in
                                    var digest: DigestSum?
                                    let part = try VerifyRequest.readRange(
                                        &reader, path: "ranges[\(index)].parts[\(position)]", withEntity: false
                                    ) {
                                        reader, key in
                                        if key == "digest" { digest = DigestSum(try reader.readString()) } else { try reader.skipValue() }
                                    }
                                    guard let digest else {
                                        throw ProtocolError(
                                            .invalidShape, "a part has a digest", path: "ranges[\(index)].parts[\(position)]")
                                    }
                                    partRanges.append((part, digest))
                                }
                            }
                            for (part, digest) in partRanges {
                                parts.append(
                                    RangeDigest(range: DigestRange(entity: range.entity, from: part.from, to: part.to), digest: digest))
                            }
                            response.ranges.append(Split(range: range, parts: parts))
                        }
                    case "repair": response.repair = try decoder.decodeChangeSet(&reader)
                    case "unanswered":
                        try reader.readArray { reader, index in
                            response.unanswered.append(
                                try VerifyRequest.readRange(&reader, path: "unanswered[\(index)]") { reader, _ in try reader.skipValue() })
                        }
                    default: try reader.skipValue()
                    }
                }
                guard response.revision >= 0 else { throw ProtocolError(.invalidShape, "missing \"revision\"") }
                return response
            }
        }
    }
}
