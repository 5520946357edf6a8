package import GRDB

/// The store file's key-value state (`_rs_state`): the revision the data reflects, the next
/// temporary ID, the schema, the server and token, and the data set a snapshot comes from.
package struct StoreStateTable {
    package enum Key: String, Sendable {
        case schema
        case maxRevision = "max_revision"
        case nextTemporaryID = "next_temporary_id"
        /// Set once the store's temporary IDs start below every one its token used before
        /// (`GET /device`'s `lowestTemporaryID`): a new store on a token another store used.
        case temporaryIDsAgreed = "temporary_ids_agreed"
        case serverURL = "server_url"
        case token
        /// The identity of the server's data set the store's data comes from (set by snapshots).
        case dataset
        /// A snapshot's proof that the server delivered its data set at its revision, sent on
        /// the first sync of a store started from it (the `RevSync-Snapshot-Proof` header).
        case snapshotProof = "snapshot_proof"
        /// The device's role and user, as the server last said (`GET /device`, sync responses).
        case role
        case user
        /// When the last sync (or pushed change sets) completed: seconds since 1970.
        case lastSync = "last_sync"
        /// Why the last sync failed, until one succeeds.
        case lastError = "last_error"
        /// The live mode's state (`connecting`, `live`, `offline`) and the process running it.
        case liveState = "live_state"
        case liveProcess = "live_process"
        /// How many attachments records refer to whose bytes the device lacked after its last
        /// sync (sent as `RevSync-Missing-Attachments`).
        case missingAttachments = "missing_attachments"
        /// Set when the checkpoint after an erasure could not truncate the WAL (readers held it):
        /// the next sync, or the next open, tries again.
        case checkpointPending = "checkpoint_pending"
        /// What the record hashes were computed for (the schema's entities, attributes and their
        /// types): another value, or none, makes the store compute them all again at open.
        case digestSchema = "digest_schema"
        /// The last revision at which the store's records were proven equal to the server's.
        case verifiedRevision = "verified_revision"
        /// Set when the last verification found records that differ and could not repair them
        /// (the next sync tries again).
        case verificationPending = "verification_pending"
        /// The schema version the app was built for (generated types' `schemaVersion`, or
        /// `revsync init --schema-version`): the store follows the server up to it, never past.
        case pinnedSchemaVersion = "pinned_schema_version"
        /// Set while the server refuses the pinned version as newer than its latest
        /// (`409 schema_ahead`): the edits wait until the server is upgraded.
        case pinAheadOfServer = "pin_ahead_of_server"
        /// Set when a schema upgrade gave records attributes (or names) whose values the store
        /// never received: the next sync asks for the whole data set (a snapshot, from revision 0,
        /// sending no change set).
        case resyncPending = "resync_pending"
        /// The offline lease the server last set (`RevSync-Max-Offline-Days`), in days.
        case leaseDays = "lease_days"
        /// When the server last answered, by the device's clock (seconds since 1970), and the
        /// server's clock then (`RevSync-Server-Time`).
        case lastServerAnswer = "last_server_answer"
        case lastServerTime = "last_server_time"
        /// What the lease has counted by the device's clock since that answer (`OfflineLease`):
        /// `offline lastReading highWater offlineAtHighWater`, in seconds.
        case leaseCount = "lease_count"
        /// The audit's cycle: the store's records counted again from their rows, a slice after each
        /// sync (`StoreAudit`, JSON), and the revision its last complete cycle began at.
        case audit
        /// The data-protection class of the store's files on Apple platforms
        /// (`StoreFileProtection`; absent: `completeUntilFirstUserAuthentication`).
        case fileProtection = "file_protection"
    }

    package let db: Database

    package init(db: Database) {
        self.db = db
    }

    package func string(_ key: Key) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM _rs_state WHERE key = ?"), arguments: [key.rawValue])
    }

    /// Sets a value; `nil` removes the key.
    package func set(_ key: Key, _ value: String?) throws {
        if let value {
            try db.cachedStatement(
                sql: "INSERT INTO _rs_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ).execute(arguments: [key.rawValue, value])
        } else {
            try db.cachedStatement(sql: "DELETE FROM _rs_state WHERE key = ?").execute(arguments: [key.rawValue])
        }
    }

    /// An integer value.
    ///
    /// - Throws: ``StoreFileError`` `corrupt` when the value is not a number.
    package func integer(_ key: Key) throws -> Int64? {
        try string(key).map { value in
            guard let integer = Int64(value) else { throw StoreFileError(.corrupt, "state \(key.rawValue) is not a number: \(value)") }
            return integer
        }
    }
}
