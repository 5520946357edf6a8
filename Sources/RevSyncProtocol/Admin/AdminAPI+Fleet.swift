public import Foundation

/// `GET /admin/api/devices` and `GET /admin/api/overview` (protocol section 10).
extension AdminAPI {
    /// How current a device is.
    public enum Currency: String, Codable, Sendable, CaseIterable {
        /// It was delivered the latest revision and lacks no file.
        case current
        /// It lacks changes less than an hour old and was seen within a day, or lacks files.
        case behind
        /// It lacks changes an hour old or more.
        case farBehind
        /// It lacks changes and was not seen for a day.
        case silent
        /// The server delivered it nothing and it never synced (a token made for a device that
        /// has not started): neither behind nor silent.
        case neverSynced
        /// Its token was revoked with a wipe order and its receipt has not come (it never came
        /// back): it holds what it held, and can receive nothing more.
        case wipePending
        /// It wiped itself (the order, or its offline lease) and the server has the receipt: it
        /// holds nothing, and nothing of it is current or behind.
        case wiped
    }

    /// `GET /admin/api/devices`: every token, revoked ones included, in order of creation.
    public struct DeviceList: Codable, Sendable, Equatable {
        /// The server's revision.
        public var maxRevision: Int64
        /// The devices.
        public var devices: [DeviceReport]

        /// A list.
        public init(maxRevision: Int64, devices: [DeviceReport]) {
            self.maxRevision = maxRevision
            self.devices = devices
        }
    }

    /// One device as the server knows it.
    public struct DeviceReport: Codable, Sendable, Equatable {
        /// The token's number.
        public var id: Int64
        /// Its name.
        public var name: String
        /// Its role.
        public var role: String
        /// Its user (a record of the schema's `users`).
        public var user: Int64?
        /// That user's name.
        public var userName: String?
        /// Its latest request.
        public var lastSeen: Date?
        /// The revision the server delivered to it.
        public var revision: Int64
        /// The server's revision minus `revision`.
        public var behind: Int64
        /// How long ago the oldest change it lacks was committed.
        public var behindSeconds: Int64?
        /// How current it is.
        public var currency: Currency
        /// The revision its latest sync claimed.
        public var claimedRevision: Int64?
        /// The change sets still in its outbox, as its latest request said.
        public var pending: Int64?
        /// The attachments it lacked after its last sync.
        public var missingAttachments: Int64?
        /// The erasures whose values it may still hold.
        public var holdsErasures: [Int64]
        /// Whether it holds a live stream.
        public var live: Bool
        /// Its client library and version.
        public var clientVersion: String?
        /// The schema version its app speaks.
        public var schemaVersion: Int64?
        /// Its latest refused change set.
        public var lastRefusal: Refusal?
        /// Its syncs.
        public var syncs: Int64
        /// Bytes it sent.
        public var bytesIn: Int64
        /// Bytes sent to it.
        public var bytesOut: Int64
        /// The last revision at which its records were proven equal to the server's.
        public var verifiedRevision: Int64?
        /// When.
        public var verifiedAt: Date?
        /// Whether that is the latest revision.
        public var verifiedCurrent: Bool
        /// When its records were last found to differ.
        public var mismatchAt: Date?
        /// Records repairs sent it or had it drop, in all.
        public var repairs: Int64
        /// Its last repair.
        public var lastRepair: Repair?
        /// When the token was created.
        public var created: Date
        /// Whether it is revoked.
        public var revoked: Bool
        /// Why its requests are refused for the schema version its app speaks, since it was last
        /// served (`nil`: they are not): it needs attention, and its change sets wait.
        public var versionRefusal: VersionRefusal? = nil
        /// The wipe an operator ordered with the revocation (`nil`: none): pending until the
        /// device's receipt arrives.
        public var wipe: Wipe? = nil
        /// When the device wiped itself, by its receipt (`nil`: not wiped, or the wipe pending).
        public var wipedAt: Date? { wipe?.wipedAt }
        /// When its offline lease ends: its last request plus the lease (`maxOfflineDays`), by the
        /// server's clock. A device that has not reached the server by then wipes itself at its
        /// next open, with the change sets it has not sent (`nil`: no lease, never seen, revoked).
        public var leaseEndsAt: Date? = nil
        /// What its last proof said of its audit: the revision its last complete audit began at
        /// (every record re-hashed from its row since), -1 for none yet; `nil` for a client that
        /// does not say (before 0.13), whose proof counts by its sums alone.
        public var auditedRevision: Int64? = nil

        /// A wipe order, and the device's receipt.
        public struct Wipe: Codable, Sendable, Equatable {
            /// When it was ordered.
            public var orderedAt: Date
            /// Whether the device has not sent its receipt yet (it never came back, or not yet).
            public var pending: Bool
            /// When the receipt arrived.
            public var wipedAt: Date?
            /// What the device removed.
            public var receipt: WipeReceipt?

            /// A wipe.
            public init(orderedAt: Date, wipedAt: Date?, receipt: WipeReceipt?) {
                self.orderedAt = orderedAt
                self.pending = wipedAt == nil
                self.wipedAt = wipedAt
                self.receipt = receipt
            }

            private enum CodingKeys: String, CodingKey { case orderedAt, pending, wipedAt, receipt }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(orderedAt, forKey: .orderedAt)
                try container.encode(pending, forKey: .pending)
                try container.encode(wipedAt, forKey: .wipedAt)
                try container.encode(receipt, forKey: .receipt)
            }
        }

        /// A device refused for its schema version.
        public struct VersionRefusal: Codable, Sendable, Equatable {
            /// `upgrade_required` (its version was retired: `minimumVersion`) or `schema_ahead`
            /// (newer than the server's latest).
            public var code: String
            /// The version its app speaks.
            public var schemaVersion: Int64?
            /// When it was last refused.
            public var at: Date

            /// A refusal.
            public init(code: String, schemaVersion: Int64?, at: Date) {
                self.code = code
                self.schemaVersion = schemaVersion
                self.at = at
            }
        }

        /// A device's latest refused change set.
        public struct Refusal: Codable, Sendable, Equatable {
            /// When.
            public var time: Date
            /// The reason (`stale_revision`, `forbidden`, ...).
            public var reason: String
            /// The change set's id.
            public var changeSet: String

            /// A refusal.
            public init(time: Date, reason: String, changeSet: String) {
                self.time = time
                self.reason = reason
                self.changeSet = changeSet
            }
        }

        /// A device's last repair.
        public struct Repair: Codable, Sendable, Equatable {
            /// The records it moved.
            public var records: Int64
            /// When.
            public var at: Date

            /// A repair.
            public init(records: Int64, at: Date) {
                self.records = records
                self.at = at
            }
        }

        /// A device (every member, in the order the body holds them).
        public init(
            id: Int64, name: String, role: String, user: Int64?, userName: String?, lastSeen: Date?, revision: Int64, behind: Int64,
            behindSeconds: Int64?, currency: Currency, claimedRevision: Int64?, pending: Int64?, missingAttachments: Int64?,
            holdsErasures: [Int64], live: Bool, clientVersion: String?, schemaVersion: Int64?, lastRefusal: Refusal?, syncs: Int64,
            bytesIn: Int64, bytesOut: Int64, verifiedRevision: Int64?, verifiedAt: Date?, verifiedCurrent: Bool, mismatchAt: Date?,
            repairs: Int64, lastRepair: Repair?, created: Date, revoked: Bool
        ) {
            self.id = id
            self.name = name
            self.role = role
            self.user = user
            self.userName = userName
            self.lastSeen = lastSeen
            self.revision = revision
            self.behind = behind
            self.behindSeconds = behindSeconds
            self.currency = currency
            self.claimedRevision = claimedRevision
            self.pending = pending
            self.missingAttachments = missingAttachments
            self.holdsErasures = holdsErasures
            self.live = live
            self.clientVersion = clientVersion
            self.schemaVersion = schemaVersion
            self.lastRefusal = lastRefusal
            self.syncs = syncs
            self.bytesIn = bytesIn
            self.bytesOut = bytesOut
            self.verifiedRevision = verifiedRevision
            self.verifiedAt = verifiedAt
            self.verifiedCurrent = verifiedCurrent
            self.mismatchAt = mismatchAt
            self.repairs = repairs
            self.lastRepair = lastRepair
            self.created = created
            self.revoked = revoked
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            try container.encode(role, forKey: .role)
            try container.encode(user, forKey: .user)
            try container.encode(userName, forKey: .userName)
            try container.encode(lastSeen, forKey: .lastSeen)
            try container.encode(revision, forKey: .revision)
            try container.encode(behind, forKey: .behind)
            try container.encode(behindSeconds, forKey: .behindSeconds)
            try container.encode(currency, forKey: .currency)
            try container.encode(claimedRevision, forKey: .claimedRevision)
            try container.encode(pending, forKey: .pending)
            try container.encode(missingAttachments, forKey: .missingAttachments)
            try container.encode(holdsErasures, forKey: .holdsErasures)
            try container.encode(live, forKey: .live)
            try container.encode(clientVersion, forKey: .clientVersion)
            try container.encode(schemaVersion, forKey: .schemaVersion)
            try container.encode(lastRefusal, forKey: .lastRefusal)
            try container.encode(syncs, forKey: .syncs)
            try container.encode(bytesIn, forKey: .bytesIn)
            try container.encode(bytesOut, forKey: .bytesOut)
            try container.encode(verifiedRevision, forKey: .verifiedRevision)
            try container.encode(verifiedAt, forKey: .verifiedAt)
            try container.encode(verifiedCurrent, forKey: .verifiedCurrent)
            try container.encode(mismatchAt, forKey: .mismatchAt)
            try container.encode(repairs, forKey: .repairs)
            try container.encode(lastRepair, forKey: .lastRepair)
            try container.encode(created, forKey: .created)
            try container.encode(revoked, forKey: .revoked)
            try container.encode(versionRefusal, forKey: .versionRefusal)
            try container.encode(wipe, forKey: .wipe)
            try container.encode(leaseEndsAt, forKey: .leaseEndsAt)
            try container.encode(auditedRevision, forKey: .auditedRevision)
            // Read from `wipe` when decoded; written for whoever reads the top level only.
            var derived = encoder.container(keyedBy: DerivedKeys.self)
            try derived.encode(wipedAt, forKey: .wipedAt)
        }

        private enum DerivedKeys: String, CodingKey { case wipedAt }
    }
}
