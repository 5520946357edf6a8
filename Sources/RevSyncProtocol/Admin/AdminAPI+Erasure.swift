public import Foundation

/// `POST /admin/api/erase` and `GET /admin/api/erasures` (protocol section 13).
extension AdminAPI {
    /// `POST /admin/api/erase`: the record (or some of its attributes) to erase, and why.
    public struct EraseRequest: Codable, Sendable, Equatable {
        /// The record's entity.
        public var entity: String
        /// The record's ID.
        public var id: Int64
        /// Only these attributes; `nil`: the whole record.
        public var attributes: [String]?
        /// The request's reference, kept with the receipt (not the person's data).
        public var reason: String
        /// List what the erasure would reach; erase nothing.
        public var dryRun: Bool

        private enum CodingKeys: String, CodingKey { case entity, id, attributes, reason, dryRun }

        /// A request.
        public init(entity: String, id: Int64, attributes: [String]? = nil, reason: String, dryRun: Bool = false) {
            self.entity = entity
            self.id = id
            self.attributes = attributes
            self.reason = reason
            self.dryRun = dryRun
        }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseMembers(otherThan: ["entity", "id", "attributes", "reason", "dryRun"])
            let container = try decoder.container(keyedBy: CodingKeys.self)
            entity = try container.decode(String.self, forKey: .entity)
            id = try container.decode(Int64.self, forKey: .id)
            // `"attributes": null` is the whole record, as the document says; but `dryRun`, once
            // given, is decoded as a boolean, so that a generated client's `"dryRun": null` is
            // refused rather than read as absent (which would erase for real).
            attributes = try container.decodeIfPresent([String].self, forKey: .attributes)
            reason = try container.decode(String.self, forKey: .reason)
            dryRun = container.contains(.dryRun) ? try container.decode(Bool.self, forKey: .dryRun) : false
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(entity, forKey: .entity)
            try container.encode(id, forKey: .id)
            try container.encodeIfPresent(attributes, forKey: .attributes)
            try container.encode(reason, forKey: .reason)
            if dryRun { try container.encode(true, forKey: .dryRun) }
        }
    }

    /// What `POST /admin/api/erase` did (or, for a dry run, would do).
    public struct EraseResult: Codable, Sendable, Equatable {
        /// The erasure's id (0 for a dry run).
        public var id: Int64
        /// The revision of its change set.
        public var revision: Int64
        /// Its change set's id.
        public var changeSet: String
        /// The entity named.
        public var entity: String
        /// The record named.
        public var recordId: Int64
        /// The attributes named; `nil`: the whole record.
        public var attributes: [String]?
        /// Every record it reached, its cascade included.
        public var erased: [ErasedRecord]
        /// Records with a reference to an erased record set to null.
        public var nullified: Int64
        /// Each reference set to null (a dry run: each it would set): the record holding it
        /// and the attribute. `nil` from a server before release 0.12.
        public var nullifiedReferences: [NullifiedReference]?
        /// Change log entries rewritten without the values.
        public var logEntriesRewritten: Int64
        /// History rows rewritten.
        public var historyRowsRewritten: Int64
        /// Stored refusals rewritten.
        public var refusalsRewritten: Int64
        /// Attachments deleted (only the erased values referred to them).
        public var attachmentsDeleted: Int64
        /// Whether the database's freed space was overwritten (SQLite: the WAL checkpoint completed).
        public var spaceReclaimed: Bool
        /// The snapshot made without the values, if one was.
        public var snapshotRevision: Int64?
        /// What failed after the erasure committed (it stands).
        public var errors: [Failure]
        /// Whether nothing was erased (a dry run).
        public var dryRun: Bool

        /// One record an erasure reached.
        public struct ErasedRecord: Codable, Sendable, Equatable {
            /// Its entity.
            public var entity: String
            /// Its ID.
            public var id: Int64
            /// The attributes erased; `nil`: the whole record.
            public var attributes: [String]?

            /// A record.
            public init(entity: String, id: Int64, attributes: [String]?) {
                self.entity = entity
                self.id = id
                self.attributes = attributes
            }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(entity, forKey: .entity)
                try container.encode(id, forKey: .id)
                try container.encode(attributes, forKey: .attributes)
            }
        }

        /// One reference to an erased record, set to null.
        public struct NullifiedReference: Codable, Sendable, Equatable {
            /// The entity of the record holding it.
            public var entity: String
            /// That record's ID.
            public var id: Int64
            /// The reference attribute.
            public var attribute: String

            /// A reference.
            public init(entity: String, id: Int64, attribute: String) {
                self.entity = entity
                self.id = id
                self.attribute = attribute
            }
        }

        /// Something that failed after the erasure committed.
        public struct Failure: Codable, Sendable, Equatable {
            /// For programs.
            public var code: String
            /// For people.
            public var message: String

            /// A failure.
            public init(code: String, message: String) {
                self.code = code
                self.message = message
            }
        }

        /// A result.
        public init(
            id: Int64, revision: Int64, changeSet: String, entity: String, recordId: Int64, attributes: [String]?,
            erased: [ErasedRecord], nullified: Int64, logEntriesRewritten: Int64, historyRowsRewritten: Int64,
            refusalsRewritten: Int64, attachmentsDeleted: Int64, spaceReclaimed: Bool, snapshotRevision: Int64?,
            errors: [Failure], dryRun: Bool
        ) {
            self.id = id
            self.revision = revision
            self.changeSet = changeSet
            self.entity = entity
            self.recordId = recordId
            self.attributes = attributes
            self.erased = erased
            self.nullified = nullified
            self.logEntriesRewritten = logEntriesRewritten
            self.historyRowsRewritten = historyRowsRewritten
            self.refusalsRewritten = refusalsRewritten
            self.attachmentsDeleted = attachmentsDeleted
            self.spaceReclaimed = spaceReclaimed
            self.snapshotRevision = snapshotRevision
            self.errors = errors
            self.dryRun = dryRun
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(revision, forKey: .revision)
            try container.encode(changeSet, forKey: .changeSet)
            try container.encode(entity, forKey: .entity)
            try container.encode(recordId, forKey: .recordId)
            try container.encode(attributes, forKey: .attributes)
            try container.encode(erased, forKey: .erased)
            try container.encode(nullified, forKey: .nullified)
            try container.encode(nullifiedReferences ?? [], forKey: .nullifiedReferences)
            try container.encode(logEntriesRewritten, forKey: .logEntriesRewritten)
            try container.encode(historyRowsRewritten, forKey: .historyRowsRewritten)
            try container.encode(refusalsRewritten, forKey: .refusalsRewritten)
            try container.encode(attachmentsDeleted, forKey: .attachmentsDeleted)
            try container.encode(spaceReclaimed, forKey: .spaceReclaimed)
            try container.encode(snapshotRevision, forKey: .snapshotRevision)
            try container.encode(errors, forKey: .errors)
            try container.encode(dryRun, forKey: .dryRun)
        }
    }

    /// `GET /admin/api/erasures`: every erasure, oldest first.
    public struct ErasureList: Codable, Sendable, Equatable {
        /// The erasures with their receipts.
        public var erasures: [ErasureReceipt]

        /// A list.
        public init(erasures: [ErasureReceipt]) {
            self.erasures = erasures
        }
    }

    /// One erasure and which devices may still hold what it erased.
    public struct ErasureReceipt: Codable, Sendable, Equatable {
        /// The erasure's id.
        public var id: Int64
        /// The revision of its change set.
        public var revision: Int64
        /// The entity named.
        public var entity: String
        /// The record named.
        public var recordId: Int64
        /// The attributes named; `nil`: the whole record.
        public var attributes: [String]?
        /// Why (the request's reference).
        public var reason: String
        /// The admin token that asked.
        public var who: String
        /// When.
        public var when: Date
        /// How many records it reached.
        public var records: Int64
        /// The devices that count: not revoked, and ever synced.
        public var devices: Int64
        /// Those proven to hold none of the erased values.
        public var devicesErased: Int64
        /// The names of the others, in order of creation.
        public var devicesHolding: [String]
        /// Whether every device counted is erased.
        public var complete: Bool

        /// A receipt.
        public init(
            id: Int64, revision: Int64, entity: String, recordId: Int64, attributes: [String]?, reason: String, who: String,
            when: Date, records: Int64, devices: Int64, devicesErased: Int64, devicesHolding: [String], complete: Bool
        ) {
            self.id = id
            self.revision = revision
            self.entity = entity
            self.recordId = recordId
            self.attributes = attributes
            self.reason = reason
            self.who = who
            self.when = when
            self.records = records
            self.devices = devices
            self.devicesErased = devicesErased
            self.devicesHolding = devicesHolding
            self.complete = complete
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(revision, forKey: .revision)
            try container.encode(entity, forKey: .entity)
            try container.encode(recordId, forKey: .recordId)
            try container.encode(attributes, forKey: .attributes)
            try container.encode(reason, forKey: .reason)
            try container.encode(who, forKey: .who)
            try container.encode(when, forKey: .when)
            try container.encode(records, forKey: .records)
            try container.encode(devices, forKey: .devices)
            try container.encode(devicesErased, forKey: .devicesErased)
            try container.encode(devicesHolding, forKey: .devicesHolding)
            try container.encode(complete, forKey: .complete)
        }
    }
}
