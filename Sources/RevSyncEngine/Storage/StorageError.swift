import RevSyncProtocol

/// A failure of the store itself, as opposed to a refused request.
public enum StorageError: Error, Sendable, CustomStringConvertible {
    /// The schema cannot be served from this database.
    case schemaMismatch(String)
    /// The database holds something the server cannot read.
    case corrupt(String)
    /// The database cannot be reached.
    case unavailable(String)
    /// There is no RevSync database there (no file, or no server tables), and the caller asked
    /// not to create one.
    case notSetUp(String)

    public var description: String {
        switch self {
        case .schemaMismatch(let message): "schema mismatch: \(message)"
        case .corrupt(let message): "database content is invalid: \(message)"
        case .unavailable(let message): "database unavailable: \(message)"
        case .notSetUp(let message): message
        }
    }
}
