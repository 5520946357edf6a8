/// Why a store file (a device's store or a snapshot) cannot be created, opened or used.
///
/// `RevSyncClient` hands these to apps as `LocalStoreError`s with the same code.
package struct StoreFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Codes shared with `LocalStoreError.Code` (same raw values).
    package enum Code: String, Sendable, Hashable {
        case storeExists = "store_exists"
        case notAStore = "not_a_store"
        case notFound = "not_found"
        case tooNew = "too_new"
        case migrationFailed = "migration_failed"
        case corrupt
        case unknownEntity = "unknown_entity"
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code.rawValue): \(message)" }
}
