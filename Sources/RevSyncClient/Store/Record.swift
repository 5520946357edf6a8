public import RevSyncProtocol

/// A record as the local store hands it out: an immutable value, never a live object.
///
/// `Record` is the general form every read can return. An app that prefers its own types
/// adopts ``ReadableRecord`` (and ``WritableRecord``) on them instead: no model classes are
/// required.
///
/// For example:
///
/// ```swift
/// let team = try await store.table("teams").find(12)
/// print(team?.text("name") ?? "gone")
/// ```
public struct Record: Sendable, Hashable {
    /// The entity (table) the record belongs to.
    public let entity: String
    /// The permanent ID, or the temporary ID (negative) until the server assigned one.
    public let id: RecordID
    /// The revision the server last sent for this record; `nil` while only this device has it.
    public let revision: Revision?
    /// Every attribute of the entity, `null` where unset.
    public let values: [String: Value]

    /// A record of `entity` with these values.
    public init(entity: String, id: RecordID, revision: Revision?, values: [String: Value]) {
        self.entity = entity
        self.id = id
        self.revision = revision
        self.values = values
    }

    /// The value of `attribute`; `.null` if unset or unknown.
    public subscript(_ attribute: String) -> Value {
        values[attribute] ?? .null
    }

    /// The attribute's text (also a date's), or `nil`.
    public func text(_ attribute: String) -> String? {
        if case .text(let text) = self[attribute] { return text }
        return nil
    }

    /// The attribute's integer, or `nil`.
    public func integer(_ attribute: String) -> Int64? {
        if case .integer(let integer) = self[attribute] { return integer }
        return nil
    }

    /// The attribute's number (an integer reads as a real), or `nil`.
    public func real(_ attribute: String) -> Double? {
        switch self[attribute] {
        case .real(let real): real
        case .integer(let integer): Double(integer)
        default: nil
        }
    }

    /// The attribute's boolean, or `nil`.
    public func bool(_ attribute: String) -> Bool? {
        if case .bool(let bool) = self[attribute] { return bool }
        return nil
    }

    /// The attribute's attachment (which bytes: `Attachment`), or `nil`.
    public func attachment(_ attribute: String) -> Attachment? {
        self[attribute].attachmentValue
    }

    /// The ID a reference attribute points to.
    public func reference(_ attribute: String) -> RecordID? {
        integer(attribute).map { RecordID($0) }
    }

    /// Whether the server has this record (it has a permanent ID and a revision).
    public var isSynced: Bool { revision != nil }
}

/// A type that can be read from a record: any app value, such as a view model, can be one
/// (the "virtual record" of the persistence design: no mandatory model classes).
///
/// For example:
///
/// ```swift
/// struct PlayerRow: ReadableRecord {
///     let id: RecordID
///     let name: String
///     init(record: Record) throws {
///         id = record.id
///         name = "\(record.text("first_name") ?? "") \(record.text("last_name") ?? "")"
///     }
/// }
/// let rows = try await store.table("players").all(as: PlayerRow.self)
/// ```
public protocol ReadableRecord: Sendable {
    /// Makes the app value from a record of the store.
    init(record: Record) throws
}

/// A type that can be written to a table: it says which attribute values it sets.
public protocol WritableRecord: Sendable {
    /// The values to write. On update, only these attributes change.
    var attributes: [String: Value] { get }
}

/// A type that can be both read from and written to a table.
public typealias VirtualRecord = ReadableRecord & WritableRecord

extension Record: ReadableRecord, WritableRecord {
    /// The record itself.
    public init(record: Record) throws {
        self = record
    }

    public var attributes: [String: Value] { values }
}
