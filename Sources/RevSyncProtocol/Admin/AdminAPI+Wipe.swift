public import Foundation

/// `POST /admin/api/revoke` and the wiped device's `POST /wipe-receipt` (protocol section 16).
extension AdminAPI {
    /// `POST /admin/api/revoke`: revoke a device's token, and with `wipe` order the device to
    /// wipe itself.
    public struct RevokeRequest: Codable, Sendable, Equatable {
        /// The device's ID (`GET /admin/api/devices`).
        public var id: Int64
        /// Order the wipe too: every request of the token is then answered `410 device_wiped`.
        public var wipe: Bool

        private enum CodingKeys: String, CodingKey { case id, wipe }

        /// A request.
        public init(id: Int64, wipe: Bool = false) {
            self.id = id
            self.wipe = wipe
        }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseMembers(otherThan: ["id", "wipe"])
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int64.self, forKey: .id)
            // Given, it is a boolean: `"wipe": null` is refused, not read as absent.
            wipe = container.contains(.wipe) ? try container.decode(Bool.self, forKey: .wipe) : false
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(wipe, forKey: .wipe)
        }
    }

    /// What `POST /admin/api/revoke` did.
    public struct RevokeResult: Codable, Sendable, Equatable {
        public var id: Int64
        public var name: String
        /// When the token was revoked (this request, or an earlier one).
        public var revokedAt: Date
        /// When the wipe was ordered; `nil` without one.
        public var wipeOrderedAt: Date?

        /// A result.
        public init(id: Int64, name: String, revokedAt: Date, wipeOrderedAt: Date?) {
            self.id = id
            self.name = name
            self.revokedAt = revokedAt
            self.wipeOrderedAt = wipeOrderedAt
        }

        private enum CodingKeys: String, CodingKey { case id, name, revokedAt, wipeOrderedAt }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(name, forKey: .name)
            try container.encode(revokedAt, forKey: .revokedAt)
            try container.encode(wipeOrderedAt, forKey: .wipeOrderedAt)
        }
    }

    /// What a wiped device removed: the body of its `POST /wipe-receipt`, and the receipt the
    /// server keeps (`GET /admin/api/devices`: `wipe.receipt`). The one receipt type, shared by
    /// the device, the wire and the engine.
    public typealias WipeReceipt = RevSyncProtocol.WipeReceipt

    /// `POST /wipe-receipt`'s answer: when the server recorded the wipe.
    public struct WipeRecorded: Codable, Sendable, Equatable {
        public var wipedAt: Date

        /// An answer.
        public init(wipedAt: Date) { self.wipedAt = wipedAt }
    }
}
