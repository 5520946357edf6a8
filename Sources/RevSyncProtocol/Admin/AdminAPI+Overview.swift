public import Foundation

/// `GET /admin/api/overview` (protocol section 10): the console's overview.
extension AdminAPI {
    /// `GET /admin/api/overview`: the console's overview.
    public struct Overview: Codable, Sendable, Equatable {
        /// The server's revision.
        public var maxRevision: Int64
        /// Every entity's rows.
        public var records: EntityCounts
        /// The devices, revoked ones apart.
        public var devices: Devices
        /// The schema versions served, and the devices speaking each.
        public var schemaVersions: SchemaVersions
        /// The devices (not revoked) by how current they are.
        public var fleet: Fleet
        /// The last 60 minutes, oldest first, the empty ones included.
        public var perMinute: [Minute]
        /// The database's size.
        public var databaseBytes: Int64?
        /// The newest snapshot made for `GET /snapshot`.
        public var snapshot: Snapshot?

        /// How many devices.
        public struct Devices: Codable, Sendable, Equatable {
            /// Not revoked.
            public var total: Int64
            /// Holding a live stream.
            public var live: Int64
            /// Revoked.
            public var revoked: Int64
            /// Proven equal at the latest revision.
            public var verifiedAtLatest: Int64

            /// Counts.
            public init(total: Int64, live: Int64, revoked: Int64, verifiedAtLatest: Int64) {
                self.total = total
                self.live = live
                self.revoked = revoked
                self.verifiedAtLatest = verifiedAtLatest
            }
        }

        /// The schema versions the data set serves.
        public struct SchemaVersions: Codable, Sendable, Equatable {
            /// The latest.
            public var latest: Int64
            /// The oldest still served (`minimumVersion`).
            public var minimum: Int64
            /// How many devices speak each version, oldest first.
            public var devices: [Version]
            /// The devices whose app spoke a version older than `minimum` in its latest request:
            /// retired while they still sync, so refused until their app is updated.
            public var retired: [RetiredDevice] = []

            /// A device on a retired version.
            public struct RetiredDevice: Codable, Sendable, Equatable {
                /// Its token's ID and name.
                public var id: Int64
                public var name: String
                /// The version its app speaks.
                public var schemaVersion: Int64

                /// A device.
                public init(id: Int64, name: String, schemaVersion: Int64) {
                    self.id = id
                    self.name = name
                    self.schemaVersion = schemaVersion
                }
            }

            /// One version and its devices.
            public struct Version: Codable, Sendable, Equatable {
                /// The version.
                public var version: Int64
                /// How many devices speak it.
                public var devices: Int64

                /// A count.
                public init(version: Int64, devices: Int64) {
                    self.version = version
                    self.devices = devices
                }
            }

            /// Versions.
            public init(latest: Int64, minimum: Int64, devices: [Version]) {
                self.latest = latest
                self.minimum = minimum
                self.devices = devices
            }
        }

        /// The devices of one currency.
        public struct Group: Codable, Sendable, Equatable {
            /// How many.
            public var count: Int64
            /// Their names.
            public var devices: [String]

            /// A group.
            public init(devices: [String]) {
                self.count = Int64(devices.count)
                self.devices = devices
            }
        }

        /// The fleet by currency.
        public struct Fleet: Codable, Sendable, Equatable {
            /// Current.
            public var current: Group
            /// Behind.
            public var behind: Group
            /// Far behind.
            public var farBehind: Group
            /// Silent.
            public var silent: Group
            /// Never synced.
            public var neverSynced: Group

            /// The fleet, from each currency's devices.
            public init(_ devices: (Currency) -> [String]) {
                current = Group(devices: devices(.current))
                behind = Group(devices: devices(.behind))
                farBehind = Group(devices: devices(.farBehind))
                silent = Group(devices: devices(.silent))
                neverSynced = Group(devices: devices(.neverSynced))
            }

            /// The group of a currency (a wiped device is revoked: never in the fleet).
            public subscript(currency: Currency) -> Group {
                switch currency {
                case .current: current
                case .behind: behind
                case .farBehind: farBehind
                case .silent: silent
                case .neverSynced: neverSynced
                case .wipePending, .wiped: Group(devices: [])
                }
            }
        }

        /// One minute's traffic, summed over the instances.
        public struct Minute: Codable, Sendable, Equatable {
            /// The minute's start.
            public var minute: Date
            /// Syncs.
            public var syncs: Int64
            /// Committed change sets.
            public var commits: Int64
            /// Refused change sets.
            public var refusals: Int64

            /// A minute.
            public init(minute: Date, syncs: Int64, commits: Int64, refusals: Int64) {
                self.minute = minute
                self.syncs = syncs
                self.commits = commits
                self.refusals = refusals
            }
        }

        /// The newest snapshot.
        public struct Snapshot: Codable, Sendable, Equatable {
            /// Its revision.
            public var revision: Int64
            /// When it was made.
            public var created: Date
            /// How old it is.
            public var ageSeconds: Int64
            /// The records it holds.
            public var records: Int64

            /// A snapshot.
            public init(revision: Int64, created: Date, ageSeconds: Int64, records: Int64) {
                self.revision = revision
                self.created = created
                self.ageSeconds = ageSeconds
                self.records = records
            }
        }

        /// An overview.
        public init(
            maxRevision: Int64, records: EntityCounts, devices: Devices, schemaVersions: SchemaVersions, fleet: Fleet,
            perMinute: [Minute], databaseBytes: Int64?, snapshot: Snapshot?
        ) {
            self.maxRevision = maxRevision
            self.records = records
            self.devices = devices
            self.schemaVersions = schemaVersions
            self.fleet = fleet
            self.perMinute = perMinute
            self.databaseBytes = databaseBytes
            self.snapshot = snapshot
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(maxRevision, forKey: .maxRevision)
            try container.encode(records, forKey: .records)
            try container.encode(devices, forKey: .devices)
            try container.encode(schemaVersions, forKey: .schemaVersions)
            try container.encode(fleet, forKey: .fleet)
            try container.encode(perMinute, forKey: .perMinute)
            try container.encode(databaseBytes, forKey: .databaseBytes)
            try container.encode(snapshot, forKey: .snapshot)
        }
    }

    /// A count per entity, as a JSON object (``counts`` in the schema's order on the server; the
    /// wire sorts them by name).
    public struct EntityCounts: Codable, Sendable, Equatable {
        /// Each entity and its count.
        public var counts: [(entity: String, count: Int64)]

        /// Counts.
        public init(_ counts: [(entity: String, count: Int64)]) {
            self.counts = counts
        }

        /// The count of `entity`.
        public subscript(entity: String) -> Int64? {
            counts.first { $0.entity == entity }?.count
        }

        public static func == (left: EntityCounts, right: EntityCounts) -> Bool {
            left.counts.elementsEqual(right.counts) { $0.entity == $1.entity && $0.count == $1.count }
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: DynamicKey.self)
            counts = try container.allKeys.map { ($0.stringValue, try container.decode(Int64.self, forKey: $0)) }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: DynamicKey.self)
            for (entity, count) in counts { try container.encode(count, forKey: DynamicKey(entity)) }
        }
    }
}
