/// Why a device wiped itself (protocol section 16).
public enum WipeReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// An operator revoked the device's token with a wipe order (`410 device_wiped`).
    case ordered
    /// The store had not reached the server for longer than its offline lease.
    case leaseExpired
}

/// What a wiped device removed, and why: the body of its `POST /wipe-receipt`, what the server
/// keeps of it (`GET /admin/api/devices`: `wipe.receipt`), and what the device's own report
/// holds. One type for the device, the wire and the engine.
///
/// ```json
/// {"records": 52000, "unsyncedChangeSets": 2, "attachments": 14, "reason": "leaseExpired"}
/// ```
public struct WipeReceipt: Codable, Sendable, Hashable {
    /// The records the store held.
    public var records: Int64
    /// The change sets it had not sent: discarded, never to reach the server.
    public var unsyncedChangeSets: Int64
    /// The attachment files it held.
    public var attachments: Int64
    /// Why it wiped itself: `ordered` (the token's wipe order; the default when absent) or
    /// `leaseExpired` (it had not heard from the server for longer than its offline lease: the
    /// server then revokes the token, which the device no longer holds data for).
    public var reason: WipeReason

    /// A receipt.
    public init(records: Int64, unsyncedChangeSets: Int64, attachments: Int64, reason: WipeReason = .ordered) {
        self.records = records
        self.unsyncedChangeSets = unsyncedChangeSets
        self.attachments = attachments
        self.reason = reason
    }

    private enum CodingKeys: String, CodingKey { case records, unsyncedChangeSets, attachments, reason }

    /// Read strictly: the four members and no other, counts of 0 or more, a reason the protocol
    /// names.
    public init(from decoder: any Decoder) throws {
        try decoder.refuseMembers(otherThan: ["records", "unsyncedChangeSets", "attachments", "reason"])
        let container = try decoder.container(keyedBy: CodingKeys.self)
        records = try container.decode(Int64.self, forKey: .records)
        unsyncedChangeSets = try container.decode(Int64.self, forKey: .unsyncedChangeSets)
        attachments = try container.decode(Int64.self, forKey: .attachments)
        guard records >= 0, unsyncedChangeSets >= 0, attachments >= 0 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "counts are 0 or more"))
        }
        guard let reason = try container.decodeIfPresent(String.self, forKey: .reason) else {
            self.reason = .ordered
            return
        }
        guard let known = WipeReason(rawValue: reason) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "reason is ordered or leaseExpired"))
        }
        self.reason = known
    }
}
