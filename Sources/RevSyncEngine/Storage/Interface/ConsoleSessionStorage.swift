/// The console's sessions, read: only their rows (the console's own code decides what a
/// session may do).
public protocol ConsoleSessionReading: AnyObject {
    /// The console session row of a cookie's hash, if its token is still an unrevoked admin's.
    func consoleSession(hash: String) throws -> ConsoleSessionRow?
}

/// The console's sessions, written.
public protocol ConsoleSessionWriting: AnyObject {
    func createConsoleSession(hash: String, device: Int64, csrf: String, at time: Int64) throws
    /// Notes that the session was used at `time`.
    func touchConsoleSession(hash: String, at time: Int64) throws
    /// Ends one session (`hash`), or every session last used before `idleBefore`.
    func deleteConsoleSessions(hash: String?, idleBefore: Int64?) throws
}
