import RevSyncProtocol

/// A console session as stored (`_rs_console_sessions`): whose it is, its CSRF token, when it
/// was made and last used. What a session may do is the console's (`ConsoleSessions`).
public struct ConsoleSessionRow: Sendable, Hashable {
    public var device: Device
    /// The token every form of the session carries.
    public var csrf: String
    /// Seconds since 1970.
    public var createdAt: Int64
    public var lastUsed: Int64
}
