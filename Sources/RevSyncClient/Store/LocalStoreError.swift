import RevSyncSQLite

/// Why the local store refused an operation. Nothing was changed.
public struct LocalStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of rule was broken. Extensible: new codes may appear.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// An entity the schema does not have.
        public static let unknownEntity = Code(rawValue: "unknown_entity")
        /// An attribute the entity does not have.
        public static let unknownAttribute = Code(rawValue: "unknown_attribute")
        /// A value the schema refuses (wrong type, null in a required attribute, ...).
        public static let invalidValue = Code(rawValue: "invalid_value")
        /// A reference to a record the store does not hold.
        public static let missingReference = Code(rawValue: "missing_reference")
        /// A record (or snapshot file) that is not there.
        public static let notFound = Code(rawValue: "not_found")
        /// A delete a `deny` rule forbids while other records reference the record.
        public static let deleteDenied = Code(rawValue: "delete_denied")
        /// The schema's permission rules do not let this device's role do it: the server would
        /// refuse it. The message names the rule.
        public static let forbidden = Code(rawValue: "forbidden")
        /// A numbered migration of the store failed; the store is as it was before it.
        public static let migrationFailed = Code(rawValue: "migration_failed")
        /// A file is already where a new store was to be created: a store is never overwritten.
        public static let storeExists = Code(rawValue: "store_exists")
        /// The file is not a RevSync store (or not there).
        public static let notAStore = Code(rawValue: "not_a_store")
        /// The store was written by a newer version of RevSync.
        public static let tooNew = Code(rawValue: "too_new")
        /// A schema the store cannot follow, or a snapshot of another schema version.
        public static let schemaMismatch = Code(rawValue: "schema_mismatch")
        /// The store holds something it cannot read.
        public static let corrupt = Code(rawValue: "corrupt")
        /// A snapshot of another server's data set.
        public static let wrongDataset = Code(rawValue: "wrong_dataset")
        /// A write to one of the store's own tables (`_rs_…`), which only RevSync writes.
        public static let storeTable = Code(rawValue: "store_table")
        /// A refusal that writing the same again would not change (forbidden, invalid, a
        /// deleted record), or one already resolved: the message says which.
        public static let notReappliable = Code(rawValue: "not_reappliable")
        /// A refusal's records changed since the inbox showed them: it now shows the new truth;
        /// look again, then re-apply or dismiss.
        public static let refusalOutdated = Code(rawValue: "refusal_outdated")
        /// A temporary ID of a record of another entity, which the server has since given a
        /// permanent ID (a stale ID kept by the app): the message names the record it became.
        public static let temporaryIDOfAnotherEntity = Code(rawValue: "temporary_id_of_another_entity")
        /// The store holds change sets the server has not answered yet.
        public static let pendingChanges = Code(rawValue: "pending_changes")
    }

    /// What kind of rule was broken.
    public var code: Code
    /// What happened, in one line, for people.
    public var message: String

    /// An error of kind `code` saying `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

extension LocalStoreError {
    /// The same error, as the store's API reports it: store files (`RevSyncSQLite`) and the
    /// local store share their codes.
    init(_ error: StoreFileError) {
        self.init(Code(rawValue: error.code.rawValue), error.message)
    }

    /// Runs `body`, reporting a store file's error as a `LocalStoreError`.
    static func reporting<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StoreFileError {
            throw LocalStoreError(error)
        }
    }
}
