import HTTPTypes
import RevSyncEngine
import RevSyncProtocol

extension HTTPField.Name {
    /// A request header: the schema version the device's app was built for. Its change sets are
    /// read, and its answers written, in that version (``SchemaLens``).
    static let revSyncDeviceSchemaVersion = Self(RevSyncHeader.schemaVersion)!
}

extension SyncHTTPServer {
    /// How a request speaks (``SpokenVersion``): the schema version it names
    /// (`RevSync-Schema-Version`; without it, the latest), how that version reads the stored
    /// layout, and which version's digest its proofs compare with. Decided once per request.
    ///
    /// - Throws: ``APIError`` `400 invalid_header` for a header that is not a version number;
    ///   ``SyncError`` for a version newer than the server's (`409 schema_ahead`) or retired by
    ///   the schema's `minimumVersion` (`426 upgrade_required`).
    func speaking(_ headers: HTTPFields) throws -> SpokenVersion {
        switch RequestedSchemaVersion(headers) {
        case .latest: return engine.speakingLatest
        case .version(let version): return try engine.speaking(version)
        case .invalid:
            throw APIError(
                status: .badRequest, code: "invalid_header", message: "RevSync-Schema-Version must be a schema version number (1 or more)")
        }
    }
}

/// The schema version a device's request names (`RevSync-Schema-Version`), read from its
/// headers in this one place: by ``SyncHTTPServer/speaking(_:)``, which decides how the request
/// is read and answered, and by the request's record of what its device spoke (a version the
/// server refuses included).
enum RequestedSchemaVersion: Equatable {
    /// No header: the latest.
    case latest
    case version(Int)
    /// Not a version number.
    case invalid

    init(_ headers: HTTPFields) {
        guard let text = headers[.revSyncDeviceSchemaVersion] else {
            self = .latest
            return
        }
        guard text.utf8.count <= 9, let version = Int(text), version >= 1 else {
            self = .invalid
            return
        }
        self = .version(version)
    }
}
