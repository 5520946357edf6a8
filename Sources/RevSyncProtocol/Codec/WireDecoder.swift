/// The format's maximum nesting: message, changeSets, change set, change object,
/// attributes, record. One level more is allowed for forward-compatible server keys.
let maximumDepth = 8

/// The decoder of the wire format: one message, change set or record at a time, with the
/// rules of its sender and the limits of the request, and a path to what failed.
final class WireDecoder {
    enum PathComponent {
        case key(String)
        case index(Int)
    }

    /// Where a streaming decode hands what it read (``SyncMessage/decodeResponse``).
    struct Sinks {
        let snapshotBegins: (ChangeSet) throws -> Void
        let snapshotRecord: (String, RecordID, RecordAttributes) throws -> Void
        let changeSet: (ChangeSet) throws -> Void
    }

    private let sender: MessageSender
    private let limits: DecodingLimits
    var path: [PathComponent] = []
    var sinks: Sinks?
    /// The error a sink threw, passed through unchanged.
    private(set) var handlerError: (any Error)?
    /// Records named so far, against ``DecodingLimits/maxRecords``.
    private var records = 0

    init(sender: MessageSender, limits: DecodingLimits = .none) {
        self.sender = sender
        self.limits = limits
    }

    func decode(_ buffer: UnsafeBufferPointer<UInt8>) throws(ProtocolError) -> SyncMessage {
        try decode(buffer) { decoder, reader in try decoder.decodeMessage(&reader) }
    }

    func decode<T>(
        _ buffer: UnsafeBufferPointer<UInt8>,
        _ body: (WireDecoder, inout JSONReader) throws -> T
    ) throws(ProtocolError) -> T {
        try decode(reader: JSONReader(buffer, maxDepth: maximumDepth), body)
    }

    /// Decodes with `body`; an error the reader's input threw is kept as ``handlerError``.
    func decode<T>(
        reader: consuming JSONReader,
        _ body: (WireDecoder, inout JSONReader) throws -> T
    ) throws(ProtocolError) -> T {
        var reader = reader
        do {
            let value = try body(self, &reader)
            try reader.expectEnd()
            return value
        } catch let error as ProtocolError {
            throw error
        } catch let failure as JSONReader.Failure {
            if let underlying = failure.underlying {
                handlerError = underlying
                throw ProtocolError(.invalidJSON, "\(underlying)", path: renderedPath)
            }
            let code: ProtocolError.Code =
                switch failure.category {
                case .syntax: .invalidJSON
                case .unexpectedKind: .invalidShape
                case .outOfRange: .numberOutOfRange
                case .tooDeep: .nestingTooDeep
                case .input: .invalidJSON
                }
            throw ProtocolError(code, "\(failure.message) (at byte \(failure.offset))", path: renderedPath)
        } catch {
            throw ProtocolError(.invalidJSON, "\(error)", path: renderedPath)
        }
    }

    // MARK: Message

    func decodeMessage(_ reader: inout JSONReader) throws -> SyncMessage {
        var maxRevision: Revision?
        var changeSets: [ChangeSet]?
        var digest: DigestSum?
        var seen = Set<String>()
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            case "maxRevision":
                let value = try reader.readInteger()
                guard value >= 0 else { throw self.error(.invalidShape, "maxRevision must be 0 or more") }
                maxRevision = value
            case "changeSets":
                var list: [ChangeSet] = []
                var ids = Set<String>()
                try reader.readArray { reader, index in
                    self.path.append(.index(index))
                    guard index < self.limits.maxChangeSets else {
                        throw self.error(
                            .requestTooLarge,
                            "a request holds at most \(self.limits.maxChangeSets) change sets; send the rest in the next request")
                    }
                    let changeSet = try self.decodeChangeSet(&reader)
                    if self.sender == .client, let id = changeSet.id, !ids.insert(id).inserted {
                        self.path.append(.key("id"))
                        throw self.error(
                            .duplicateChangeSetID, "change set id \"\(id.prefix(80))\" is used by an earlier change set of this request")
                    }
                    if let sinks = self.sinks {
                        try self.handing { try sinks.changeSet(changeSet) }
                    } else {
                        list.append(changeSet)
                    }
                    self.path.removeLast()
                }
                changeSets = list
            case "digest" where self.sender == .server:
                guard let sum = DigestSum(try reader.readString()) else {
                    throw self.error(.invalidShape, "digest is \"count:32 hex digits\"")
                }
                digest = sum
            default:
                try self.unknownKey(key, &reader)
            }
            self.path.removeLast()
        }
        guard let maxRevision else { throw error(.invalidShape, "missing \"maxRevision\"") }
        guard let changeSets else { throw error(.invalidShape, "missing \"changeSets\"") }
        var message = SyncMessage(maxRevision: maxRevision, changeSets: changeSets)
        message.digest = digest
        return message
    }

    // MARK: Change set

    func decodeChangeSet(_ reader: inout JSONReader) throws -> ChangeSet {
        var changeSet = ChangeSet()
        var types: [String]?
        var objects: [String: EntityChanges] = [:]
        var seen = Set<String>()
        var snapshotStarted = false
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            case "id":
                let id = try reader.readString()
                guard Names.isChangeSetID(id) else {
                    throw self.error(
                        .invalidChangeSetID, "a change set id has 1 to 200 characters and no control characters (clients send a UUID)")
                }
                changeSet.id = id
            case "types":
                var list: [String] = []
                try reader.readArray { reader, index in
                    self.path.append(.index(index))
                    list.append(try reader.readString())
                    self.path.removeLast()
                }
                types = list
            case "revision", "conflict", "reason", "conflicts", "snapshot":
                guard self.sender == .server else {
                    throw self.error(.reservedKey, "\"\(key)\" is set by the server and not allowed in a request")
                }
                try self.decodeServerKey(key, into: &changeSet, &reader)
            default:
                if key.hasPrefix("__") {
                    guard self.sender == .server else {
                        throw self.error(.reservedKey, "keys starting with \"__\" are reserved")
                    }
                    if key == "__erased__" {
                        changeSet.erased = try self.decodeErasureNotice(&reader)
                    } else {
                        try reader.skipValue()
                    }
                } else {
                    guard Names.isValid(key) else {
                        throw self.error(.invalidName, "\"\(key.prefix(80))\" is not a valid entity name (^[a-z][a-z0-9_]{0,62}$)")
                    }
                    var streaming: ((RecordID, RecordAttributes) throws -> Void)?
                    if changeSet.snapshot, let sinks = self.sinks {
                        if !snapshotStarted {
                            snapshotStarted = true
                            try self.handing { try sinks.snapshotBegins(changeSet) }
                        }
                        streaming = { id, record in try self.handing { try sinks.snapshotRecord(key, id, record) } }
                    }
                    objects[key] = try self.decodeEntityChanges(&reader, entity: key, streaming: streaming)
                }
            }
            self.path.removeLast()
        }
        guard let types else { throw error(.invalidShape, "missing \"types\"") }
        changeSet.changes = try orderedChanges(types: types, objects: objects)
        if sender == .client { try checkClientChangeSet(changeSet) }
        return changeSet
    }

    /// Puts the change objects in the order of `types`, checking that both name the same
    /// entities exactly once.
    private func orderedChanges(types: [String], objects: [String: EntityChanges]) throws -> [EntityChanges] {
        path.append(.key("types"))
        var listed = Set<String>()
        var changes: [EntityChanges] = []
        changes.reserveCapacity(types.count)
        for type in types {
            guard listed.insert(type).inserted else {
                throw error(.typesMismatch, "\"\(type.prefix(80))\" is listed twice")
            }
            guard let object = objects[type] else {
                throw error(.typesMismatch, "\"\(type.prefix(80))\" is listed but has no change object")
            }
            changes.append(object)
        }
        if let unlisted = objects.keys.sorted().first(where: { !listed.contains($0) }) {
            throw error(.typesMismatch, "change object \"\(unlisted)\" is not listed in types")
        }
        path.removeLast()
        return changes
    }

    /// The rules of a well-formed request change set that span its change objects.
    private func checkClientChangeSet(_ changeSet: ChangeSet) throws {
        guard !changeSet.isEmpty else {
            throw error(.emptyChangeSet, "the change set creates, updates and deletes nothing")
        }
        var temporaryIDs = Set<RecordID>()
        for changes in changeSet.changes {
            path.append(.key(changes.entity))
            path.append(.key("create"))
            for id in changes.create where !temporaryIDs.insert(id).inserted {
                throw error(.duplicateID, "temporary ID \(id) is created twice in this change set")
            }
            path.removeLast(2)
        }
    }

    // MARK: Change object

    /// - Parameter streaming: receives each record instead of ``EntityChanges/attributes``.
    private func decodeEntityChanges(
        _ reader: inout JSONReader, entity: String, streaming: ((RecordID, RecordAttributes) throws -> Void)? = nil
    ) throws -> EntityChanges {
        var changes = EntityChanges(entity: entity)
        var seen = Set<String>()
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            // A snapshot's records go to `streaming` as they are read: their lists are not kept
            // (a million IDs that nothing reads again).
            case "create": changes.create = try self.decodeIDs(&reader, creating: true, keeping: streaming == nil)
            case "update": changes.update = try self.decodeIDs(&reader, creating: false, keeping: streaming == nil)
            case "delete": changes.delete = try self.decodeIDs(&reader, creating: false)
            case "attributes":
                // By ID, not by key: a full sync's million keys cost half the memory.
                var recordIDs = RecordIDSet()
                try reader.readObject { reader, idKey in
                    self.path.append(.key(idKey))
                    guard let id = Self.parseID(idKey) else {
                        throw self.error(.invalidID, "\"\(idKey.prefix(40))\" is not a record ID (a non-zero decimal integer)")
                    }
                    guard recordIDs.insert(id) else {
                        throw self.error(.duplicateKey, "key \"\(idKey.prefix(80))\" appears twice")
                    }
                    if let streaming {
                        try streaming(id, try self.decodeRecord(&reader))
                    } else {
                        changes.attributes[id] = try self.decodeRecord(&reader)
                    }
                    self.path.removeLast()
                }
            default:
                try self.unknownKey(key, &reader)
            }
            self.path.removeLast()
        }
        if sender == .client { try checkClientChangeObject(changes) }
        return changes
    }

    private func checkClientChangeObject(_ changes: EntityChanges) throws {
        var listed = Set<RecordID>()
        for (list, ids) in [("create", changes.create), ("update", changes.update), ("delete", changes.delete)] {
            for id in ids where !listed.insert(id).inserted {
                path.append(.key(list))
                throw error(.duplicateID, "record \(id) is listed twice in \(changes.entity)")
            }
        }
        path.append(.key("attributes"))
        for id in changes.attributes.keys.sorted() where !listed.contains(id) {
            path.append(.key(String(id.rawValue)))
            throw error(.invalidAttribute, "attributes for record \(id), which is not in create, update or delete")
        }
        for id in changes.update + changes.delete {
            path.append(.key(String(id.rawValue)))
            guard let attributes = changes.attributes[id] else {
                throw error(.missingRevision, "record \(id) is updated or deleted without an attributes entry holding its base revision")
            }
            guard attributes.revision != nil else {
                path.append(.key("revision"))
                throw error(.missingRevision, "record \(id) is updated or deleted without its base \"revision\"")
            }
            path.removeLast()
        }
        path.removeLast()
    }

    /// - Parameter keeping: whether to return the IDs (else they are only checked).
    private func decodeIDs(_ reader: inout JSONReader, creating: Bool, keeping: Bool = true) throws -> [RecordID] {
        var ids: [RecordID] = []
        try reader.readArray { reader, index in
            self.path.append(.index(index))
            let value: Int64
            do {
                value = try reader.readInteger()
            } catch let failure as JSONReader.Failure where failure.category == .unexpectedKind {
                throw self.error(.invalidID, "record IDs are integers: \(failure.message)")
            }
            guard value != 0 else { throw self.error(.invalidID, "0 is not a record ID") }
            if self.sender == .client && creating && value > 0 {
                throw self.error(.invalidID, "create takes temporary (negative) IDs only, got \(value)")
            }
            if keeping { ids.append(RecordID(value)) }
            self.records += 1
            guard self.records <= self.limits.maxRecords else {
                throw self.error(
                    .requestTooLarge, "a request names at most \(self.limits.maxRecords) records; send the rest in the next request")
            }
            self.path.removeLast()
        }
        return ids
    }

    // MARK: Record

    func decodeRecord(_ reader: inout JSONReader) throws -> RecordAttributes {
        var record = RecordAttributes()
        var seen = Set<String>()
        try reader.readObject { reader, key in
            try self.enter(key, seen: &seen)
            switch key {
            case "revision":
                let revision = try reader.readInteger()
                guard revision >= 0 else { throw self.error(.invalidShape, "revision must be 0 or more") }
                record.revision = revision
            case "__oldId__":
                guard self.sender == .server else {
                    throw self.error(.reservedKey, "\"__oldId__\" is set by the server and not allowed in a request")
                }
                record.oldID = RecordID(try reader.readInteger())
            default:
                guard Names.isValid(key) else {
                    if key.hasPrefix("__") && self.sender == .server {
                        try reader.skipValue()
                        self.path.removeLast()
                        return
                    }
                    throw self.error(.invalidName, "\"\(key.prefix(80))\" is not a valid attribute name (^[a-z][a-z0-9_]{0,62}$)")
                }
                record.values[key] = try self.decodeValue(&reader)
            }
            self.path.removeLast()
        }
        return record
    }

    private func decodeValue(_ reader: inout JSONReader) throws -> Value {
        switch try reader.peekKind() {
        case .null:
            try reader.readNull()
            return .null
        case .bool: return .bool(try reader.readBool())
        case .string:
            let text = try reader.readString()
            guard text.utf8.count <= limits.maxValueBytes else {
                throw error(.valueTooLarge, "a value has at most \(limits.maxValueBytes) bytes; this one has \(text.utf8.count)")
            }
            return .text(text)
        case .number:
            switch try reader.readNumber() {
            case .integer(let value): return .integer(value)
            case .real(let value): return .real(value)
            }
        case .object:
            do {
                return .attachment(try Attachment.read(&reader))
            } catch let failure as ProtocolError {
                throw error(failure.code, failure.message)
            }
        case .array:
            throw error(.invalidAttribute, "attribute values are null, booleans, numbers, strings or attachments, not arrays")
        }
    }

    // MARK: Helpers

    /// Runs a sink; its error ends the decode and is kept to be rethrown as it is.
    private func handing(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            handlerError = error
            throw ProtocolError(.invalidShape, "stopped by the receiver: \(error)", path: renderedPath)
        }
    }

    func readOptionalInteger(_ reader: inout JSONReader) throws -> Int64? {
        if try reader.peekKind() == .null {
            try reader.readNull()
            return nil
        }
        return try reader.readInteger()
    }

    func readOptionalString(_ reader: inout JSONReader) throws -> String? {
        if try reader.peekKind() == .null {
            try reader.readNull()
            return nil
        }
        return try reader.readString()
    }

    /// Pushes `key` on the path, refusing a key seen before in the same object.
    func enter(_ key: String, seen: inout Set<String>) throws {
        path.append(.key(key))
        guard seen.insert(key).inserted else {
            throw error(.duplicateKey, "key \"\(key.prefix(80))\" appears twice")
        }
    }

    private func unknownKey(_ key: String, _ reader: inout JSONReader) throws {
        guard sender == .server else { throw error(.invalidShape, "unknown key \"\(key.prefix(80))\"") }
        try reader.skipValue()
    }

    private func error(_ code: ProtocolError.Code, _ message: String) -> ProtocolError {
        ProtocolError(code, message, path: renderedPath)
    }

    private var renderedPath: String {
        var result = ""
        for component in path {
            switch component {
            case .key(let key):
                if !result.isEmpty { result += "." }
                result += key.count > 80 ? String(key.prefix(80)) + "…" : key
            case .index(let index):
                result += "[\(index)]"
            }
        }
        return result
    }

    /// Parses a record ID written as a canonical decimal string: `-10`, `321`; not `0`,
    /// `010`, `+5` or ` 5`.
    static func parseID(_ key: String) -> RecordID? {
        var utf8 = key.utf8[...]
        if utf8.first == UInt8(ascii: "-") { utf8 = utf8.dropFirst() }
        guard let first = utf8.first, first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9"),
            utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int64(key)
        else { return nil }
        return RecordID(value)
    }
}
