package import GRDB
package import RevSyncProtocol

/// `PRAGMA secure_delete = ON`, on every connection RevSync opens to a SQLite file (a device's
/// store, the server's database): what an update replaced or a delete removed is overwritten
/// with zeros, which an erasure relies on (no byte of an erased value may stay in the file).
///
/// SQLite's compiled default differs (Debian builds it on, Apple's systems off); the tests start
/// every connection with it off (``startsOff``), so that what they prove is RevSync's own
/// PRAGMA, and a negative control leaves a file without it (``withoutPragma``) to show that
/// their scans would find what it keeps.
package enum SecureDelete {
    /// Tests: every connection starts with `secure_delete` off, as on Apple's systems.
    package static let startsOff = Locked(false)
    /// Tests: the files whose connections do not get the PRAGMA.
    package static let withoutPragma = Locked<Set<String>>([])

    /// Sets `secure_delete` on a new connection to the file at `path`.
    package static func prepare(_ db: Database, path: String) throws {
        if startsOff.current { try db.execute(sql: "PRAGMA secure_delete = OFF") }
        guard !withoutPragma.current.contains(path) else { return }
        try db.execute(sql: "PRAGMA secure_delete = ON")
    }
}
