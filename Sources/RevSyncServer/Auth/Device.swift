public import RevSyncProtocol

/// What a token may do.
public enum Role: String, Sendable, Hashable, CaseIterable {
    /// Syncs and writes; meant for the people who run the server.
    case admin
    /// Syncs and writes.
    case member
    /// Syncs and reads; every change set it sends is refused as `forbidden`.
    case viewer

    /// Whether change sets from this role may be applied.
    public var mayWrite: Bool { self != .viewer }
}

/// The device a request comes from, known from its token: one token per device.
public struct Device: Sendable, Hashable {
    public let id: Int64
    public let name: String
    public let role: Role
    /// The highest revision the server has delivered to the device (in a sync response or a
    /// snapshot download): what the device may honestly claim to have seen, whatever it says.
    public var deliveredRevision: Revision

    public init(id: Int64, name: String, role: Role, deliveredRevision: Revision = 0) {
        self.id = id
        self.name = name
        self.role = role
        self.deliveredRevision = deliveredRevision
    }

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

    public init(device: Device, createdAt: Int64, revokedAt: Int64?) {
        self.device = device
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }
}
