import Foundation
public import RevSyncProtocol

/// Where the data set lives: a SQLite file, or a PostgreSQL database.
///
/// For example, `./revsync.sqlite` or `postgres://revsync:secret@db.internal:5432/revsync`.
public enum StorageLocation: Sendable, Hashable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(url: String)

    /// Reads a `--database` argument: a `postgres://` or `postgresql://` URL, otherwise a file path.
    public init(_ argument: String) {
        let lowered = argument.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            self = .postgres(url: argument)
        } else {
            self = .sqlite(path: argument)
        }
    }

    /// Opens the store.
    ///
    /// - Parameters:
    ///   - schema: the schema to serve, or `nil` for the server's own tables only.
    ///   - durability: SQLite only.
    ///   - poolSize: PostgreSQL only: the most connections this instance opens.
    ///   - creating: whether a database that is not there (SQLite) or has no RevSync tables is
    ///     set up; otherwise it is refused with ``StorageError/notSetUp(_:)``, nothing created.
    public func open(
        schema: Schema?, durability: SQLiteStorage.Durability = .full, poolSize: Int = 10, creating: Bool = true
    ) async throws -> any SyncStorage {
        switch self {
        case .sqlite(let path): try SQLiteStorage(path: path, schema: schema, durability: durability, creating: creating)
        case .postgres(let url): try await PostgresStorage(url: url, schema: schema, poolSize: poolSize, creating: creating)
        }
    }

    /// The location for messages, without a password (neither `user:password@` nor
    /// `?password=`).
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): PostgresURL.redacted(url)
        }
    }

    /// `text` (an error message, say) without the passwords of this location.
    public func redacting(_ text: String) -> String {
        switch self {
        case .sqlite: text
        case .postgres(let url): PostgresURL.redact(text, url: url)
        }
    }
}
