package import GRDBSQLite

/// Binding through SQLite's C API what GRDB's generic arguments would cost too much for, on the
/// paths that bind a value per column of every record: the server's connection
/// (`GRDBConnection`) and a snapshot's records (``SnapshotRecordWriter``).
package enum SQLiteBinding {
    /// SQLite copies what it is given (`SQLITE_TRANSIENT`).
    package static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds `text` as UTF-8 (an empty text as an empty text, not NULL).
    package static func bind(_ text: String, at index: Int32, to statement: OpaquePointer) -> Int32 {
        var text = text
        return text.withUTF8 { utf8 in
            // An empty buffer may have no address; SQLite would bind NULL for a nil pointer.
            guard let base = utf8.baseAddress else { return sqlite3_bind_text(statement, index, "", 0, transient) }
            return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_bind_text(statement, index, $0, Int32(utf8.count), transient)
            }
        }
    }
}
