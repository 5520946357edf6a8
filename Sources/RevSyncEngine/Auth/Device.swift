public import RevSyncProtocol

/// The device a request comes from, known from its token: one token per device.
public struct Device: Sendable, Hashable {
    public let id: Int64
    public let name: String
    public let role: Role
    /// The record of the schema's `users` entity the token belongs to, if any: who `"$user"`
    /// is in permission rules.
    public let user: RecordID?
    /// The highest revision the server has delivered to the device (in a sync response or a
    /// snapshot download): what the device may honestly claim to have seen, whatever it says.
    public var deliveredRevision: Revision

    public init(id: Int64, name: String, role: Role, user: RecordID? = nil, deliveredRevision: Revision = 0) {
        self.id = id
        self.name = name
        self.role = role
        self.user = user
        self.deliveredRevision = deliveredRevision
    }

    /// Who the device acts as, for permission rules.
    public var actor: Actor { Actor(role: role, user: user) }

    /// The author of records the server writes itself (`revsync-server seed`): never a
    /// device's ID, so every device sees those records as changed by someone else.
    public static let server = Device(id: 0, name: "server", role: .admin)
}

/// A device as the operator sees it in `revsync-server token list`.
public struct DeviceRecord: Sendable, Hashable {
    public let device: Device
    /// Seconds since 1970.
    public let createdAt: Int64
    /// Seconds since 1970, if the token was revoked.
    public let revokedAt: Int64?
    /// The wipe an operator ordered with the revocation, and the device's receipt.
    public var wipe: Wipe?

    public init(device: Device, createdAt: Int64, revokedAt: Int64?, wipe: Wipe? = nil) {
        self.device = device
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.wipe = wipe
    }

    /// A wipe order (`revsync-server token revoke --wipe`), or a wipe the device did by its
    /// offline lease (its receipt revoked the token): its token can do nothing but learn that
    /// it is wiped (`410 device_wiped`) and send its receipt.
    public struct Wipe: Sendable, Hashable {
        /// Seconds since 1970.
        public var orderedAt: Int64
        /// When the device's receipt arrived (the server's clock, seconds since 1970); `nil`
        /// while the wipe is pending (it never came back).
        public var wipedAt: Int64?
        /// What the device said it removed, and why.
        public var receipt: WipeReceipt?

        public init(orderedAt: Int64, wipedAt: Int64? = nil, receipt: WipeReceipt? = nil) {
            self.orderedAt = orderedAt
            self.wipedAt = wipedAt
            self.receipt = receipt
        }

        /// Whether the device has not sent its receipt yet.
        public var pending: Bool { wipedAt == nil }
    }
}

extension Device {
    /// `"id": 4, "name": "ann's tablet", "role": "coach", "user": 1` (`user` null without
    /// one): the members `GET /device` and the admin API describe a device with.
    package func writeIdentity(into writer: inout JSONWriter) {
        writer.writeRaw("\"id\":")
        writer.writeInteger(id)
        writer.writeRaw(",\"name\":")
        writer.writeString(name)
        writer.writeRaw(",\"role\":")
        writer.writeString(role.rawValue)
        writer.writeRaw(",\"user\":")
        if let user { writer.writeInteger(user.rawValue) } else { writer.writeNull() }
    }
}
