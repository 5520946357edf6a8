public import Foundation

/// `GET /admin/api/history` and `POST /admin/api/revert` (protocol section 10).
extension AdminAPI {
    /// What a change did to a record: the change log's operations, and the two a delete does to
    /// other records (`cascade`: deleted with it, `nullify`: its reference set to null).
    public enum Operation: String, Codable, Sendable {
        /// The record was created.
        case create
        /// The record was updated.
        case update
        /// The record was deleted.
        case delete
        /// Deleted by another record's delete.
        case cascade
        /// A reference set to null by another record's delete.
        case nullify
    }

    /// `GET /admin/api/history?entity=E&id=N`: the changes to one record, a page at a time.
    public struct RecordHistoryPage: Codable, Sendable, Equatable {
        /// The record's entity.
        public var entity: String
        /// The record's ID.
        public var id: Int64
        /// The changes of the page, oldest first.
        public var changes: [RecordChange]
        /// The `before` that asks for the older ones; `nil` when there are none.
        public var next: Int64?

        /// A page.
        public init(entity: String, id: Int64, changes: [RecordChange], next: Int64?) {
            self.entity = entity
            self.id = id
            self.changes = changes
            self.next = next
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(entity, forKey: .entity)
            try container.encode(id, forKey: .id)
            try container.encode(changes, forKey: .changes)
            try container.encode(next, forKey: .next)
        }
    }

    /// One change to a record: who, when, what it did, the values before and after, and whether
    /// it can be reverted.
    public struct RecordChange: Codable, Sendable, Equatable {
        /// The revision of the change set.
        public var revision: Int64
        /// When it committed.
        public var time: Date
        /// The token that sent it, or the admin token that asked for a revert or an erasure.
        public var device: String
        /// The user of that token, if it has one.
        public var user: Int64?
        /// The change set's id.
        public var changeSet: String?
        /// The admin token that asked, for a change set the server made (a revert, an erasure).
        public var requestedBy: String?
        /// What the change did to the record.
        public var operation: Operation
        /// The record before (`nil` for a create).
        public var before: HistoryValues?
        /// The record after (`nil` for a delete).
        public var after: HistoryValues?
        /// For a revert, the revision it undid.
        public var revertOf: Int64?
        /// The revert that undid this change, if one stands.
        public var revertedBy: Int64?
        /// Whether the change set can be reverted now.
        public var revert: RevertCheck

        /// A change.
        public init(
            revision: Int64, time: Date, device: String, user: Int64?, changeSet: String?, requestedBy: String?,
            operation: Operation, before: HistoryValues?, after: HistoryValues?, revertOf: Int64?, revertedBy: Int64?,
            revert: RevertCheck
        ) {
            self.revision = revision
            self.time = time
            self.device = device
            self.user = user
            self.changeSet = changeSet
            self.requestedBy = requestedBy
            self.operation = operation
            self.before = before
            self.after = after
            self.revertOf = revertOf
            self.revertedBy = revertedBy
            self.revert = revert
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(revision, forKey: .revision)
            try container.encode(time, forKey: .time)
            try container.encode(device, forKey: .device)
            try container.encode(user, forKey: .user)
            try container.encode(changeSet, forKey: .changeSet)
            try container.encode(requestedBy, forKey: .requestedBy)
            try container.encode(operation, forKey: .operation)
            try container.encode(before, forKey: .before)
            try container.encode(after, forKey: .after)
            try container.encode(revertOf, forKey: .revertOf)
            try container.encode(revertedBy, forKey: .revertedBy)
            try container.encode(revert, forKey: .revert)
        }
    }

    /// Whether a change set can be reverted now, and why not.
    public struct RevertCheck: Codable, Sendable, Equatable {
        /// `true`, `false`, or `nil` for a change set too large to check on a page of history
        /// (`POST /admin/api/revert` checks it).
        public var possible: Bool?
        /// Why not (or why unchecked); `nil` when possible.
        public var reason: String?

        /// A verdict.
        public init(possible: Bool?, reason: String?) {
            self.possible = possible
            self.reason = reason
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(possible, forKey: .possible)
            try container.encode(reason, forKey: .reason)
        }
    }

    /// A record's values as history shows them, with its revision: one JSON object, `revision`
    /// among the attribute names. ``values`` holds them in the schema's order on the server; the
    /// wire sorts them by name.
    public struct HistoryValues: Codable, Sendable, Equatable {
        /// The record's revision.
        public var revision: Int64?
        /// Each attribute's value.
        public var values: [Attribute]

        /// One attribute.
        public struct Attribute: Sendable, Equatable {
            /// The attribute's name.
            public var name: String
            /// Its value.
            public var value: HistoryValue

            /// An attribute.
            public init(name: String, value: HistoryValue) {
                self.name = name
                self.value = value
            }
        }

        /// Values.
        public init(revision: Int64?, values: [Attribute]) {
            self.revision = revision
            self.values = values
        }

        /// The value of `name`, if the record has it.
        public subscript(name: String) -> HistoryValue? {
            values.first { $0.name == name }?.value
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: DynamicKey.self)
            revision = try container.decodeIfPresent(Int64.self, forKey: DynamicKey("revision"))
            values = try container.allKeys.filter { $0.stringValue != "revision" }.map {
                Attribute(name: $0.stringValue, value: try container.decode(HistoryValue.self, forKey: $0))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: DynamicKey.self)
            try container.encode(revision, forKey: DynamicKey("revision"))
            for attribute in values { try container.encode(attribute.value, forKey: DynamicKey(attribute.name)) }
        }
    }

    /// A value in history: what the attribute held, or the erasure that took it (never what it
    /// was).
    public enum HistoryValue: Codable, Sendable, Equatable {
        /// The value.
        case value(Value)
        /// Erased by the erasure of this id: `{"erased": 3}`.
        case erased(Int64)

        private enum ErasedKey: String, CodingKey { case erased }

        public init(from decoder: any Decoder) throws {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .value(.null)
            } else if let bool = try? single.decode(Bool.self) {
                self = .value(.bool(bool))
            } else if let integer = try? single.decode(Int64.self) {
                self = .value(.integer(integer))
            } else if let real = try? single.decode(Double.self) {
                self = .value(.real(real))
            } else if let text = try? single.decode(String.self) {
                self = .value(.text(text))
            } else if let erasure = try? decoder.container(keyedBy: ErasedKey.self).decode(Int64.self, forKey: .erased) {
                self = .erased(erasure)
            } else {
                self = .value(.attachment(try single.decode(Attachment.self)))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .erased(let erasure):
                var container = encoder.container(keyedBy: ErasedKey.self)
                try container.encode(erasure, forKey: .erased)
            case .value(let value):
                var single = encoder.singleValueContainer()
                switch value {
                case .null: try single.encodeNil()
                case .bool(let bool): try single.encode(bool)
                case .integer(let integer): try single.encode(integer)
                case .real(let real): try single.encode(real)
                case .text(let text): try single.encode(text)
                case .attachment(let attachment): try single.encode(attachment)
                }
            }
        }
    }

    /// `GET /admin/api/history?device=NAME`: the change sets of a device, a page at a time.
    public struct DeviceHistoryPage: Codable, Sendable, Equatable {
        /// The device's name.
        public var device: String
        /// The change sets of the page, oldest first.
        public var changeSets: [DeviceChangeSet]
        /// The `before` that asks for the older ones; `nil` when there are none.
        public var next: Int64?

        /// A page.
        public init(device: String, changeSets: [DeviceChangeSet], next: Int64?) {
            self.device = device
            self.changeSets = changeSets
            self.next = next
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(device, forKey: .device)
            try container.encode(changeSets, forKey: .changeSets)
            try container.encode(next, forKey: .next)
        }
    }

    /// One change set of a device: who, when, its first records and how many of each kind.
    public struct DeviceChangeSet: Codable, Sendable, Equatable {
        /// Its revision.
        public var revision: Int64
        /// When it committed.
        public var time: Date
        /// The token that sent it.
        public var device: String
        /// That token's user.
        public var user: Int64?
        /// Its id.
        public var changeSet: String?
        /// How many records it holds.
        public var recordCount: Int64
        /// How many of each entity and operation.
        public var counts: [Count]
        /// Its first records.
        public var records: [Record]
        /// The revert that undid it, if one stands.
        public var revertedBy: Int64?

        /// How many records of one entity one operation reached.
        public struct Count: Codable, Sendable, Equatable {
            /// The entity.
            public var entity: String
            /// The operation (the change log's: a cascade is a `delete`).
            public var operation: Operation
            /// How many.
            public var count: Int64

            /// A count.
            public init(entity: String, operation: Operation, count: Int64) {
                self.entity = entity
                self.operation = operation
                self.count = count
            }
        }

        /// One record of the change set.
        public struct Record: Codable, Sendable, Equatable {
            /// Its entity.
            public var entity: String
            /// Its ID.
            public var id: Int64
            /// What the change set did to it.
            public var operation: Operation

            /// A record.
            public init(entity: String, id: Int64, operation: Operation) {
                self.entity = entity
                self.id = id
                self.operation = operation
            }
        }

        /// A change set.
        public init(
            revision: Int64, time: Date, device: String, user: Int64?, changeSet: String?, recordCount: Int64, counts: [Count],
            records: [Record], revertedBy: Int64?
        ) {
            self.revision = revision
            self.time = time
            self.device = device
            self.user = user
            self.changeSet = changeSet
            self.recordCount = recordCount
            self.counts = counts
            self.records = records
            self.revertedBy = revertedBy
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(revision, forKey: .revision)
            try container.encode(time, forKey: .time)
            try container.encode(device, forKey: .device)
            try container.encode(user, forKey: .user)
            try container.encode(changeSet, forKey: .changeSet)
            try container.encode(recordCount, forKey: .recordCount)
            try container.encode(counts, forKey: .counts)
            try container.encode(records, forKey: .records)
            try container.encode(revertedBy, forKey: .revertedBy)
        }
    }

    /// `POST /admin/api/revert`: which committed change set to undo, by its id or its revision
    /// (exactly one member).
    public enum RevertRequest: Codable, Sendable, Equatable {
        /// `{"changeSet": "<id>"}`.
        case changeSet(String)
        /// `{"revision": R}`.
        case revision(Int64)

        private enum CodingKeys: String, CodingKey { case changeSet, revision }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseMembers(otherThan: ["changeSet", "revision"])
            let container = try decoder.container(keyedBy: CodingKeys.self)
            switch (
                try container.decodeIfPresent(String.self, forKey: .changeSet), try container.decodeIfPresent(Int64.self, forKey: .revision)
            ) {
            case (let id?, nil) where !id.isEmpty: self = .changeSet(id)
            case (nil, let revision?) where revision > 0: self = .revision(revision)
            default:
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "give a changeSet id or a revision (1 or more), not both"))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .changeSet(let id): try container.encode(id, forKey: .changeSet)
            case .revision(let revision): try container.encode(revision, forKey: .revision)
            }
        }
    }

    /// What `POST /admin/api/revert` did.
    public struct RevertResult: Codable, Sendable, Equatable {
        /// The revert's revision.
        public var revision: Int64
        /// The revert's change set id.
        public var changeSet: String
        /// The revision it undid.
        public var reverted: Int64
        /// Records created again (the change set had deleted them).
        public var recreated: Int64
        /// Records given back their earlier values.
        public var restored: Int64
        /// Records deleted (the change set had created them).
        public var deleted: Int64
        /// The admin token that asked.
        public var requestedBy: String

        /// A result.
        public init(
            revision: Int64, changeSet: String, reverted: Int64, recreated: Int64, restored: Int64, deleted: Int64, requestedBy: String
        ) {
            self.revision = revision
            self.changeSet = changeSet
            self.reverted = reverted
            self.recreated = recreated
            self.restored = restored
            self.deleted = deleted
            self.requestedBy = requestedBy
        }
    }
}
