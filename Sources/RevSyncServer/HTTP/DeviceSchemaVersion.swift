import HTTPTypes
import RevSyncEngine
import RevSyncProtocol

extension HTTPField.Name {
    /// A request header: the schema version the device's app was built for. Its change sets are
    /// read, and its answers written, in that version (``SchemaLens``).
    static let revSyncDeviceSchemaVersion = Self(RevSyncHeader.schemaVersion)!
}

extension SyncHTTPServer {
    /// The schema version a request speaks (`RevSync-Schema-Version`; without it, the latest)
    /// and how it reads the stored layout (`nil`: as stored).
    ///
    /// - Throws: ``APIError`` `400 invalid_header` for a header that is not a version number;
    ///   ``SyncError`` for a version newer than the server's (`409 schema_ahead`) or retired by
    ///   the schema's `minimumVersion` (`426 upgrade_required`).
    func schemaVersion(of headers: HTTPFields) throws -> (version: Int, lens: SchemaLens?) {
        guard let text = headers[.revSyncDeviceSchemaVersion] else {
            let latest = engine.lineage.latest.version
            return (latest, try engine.lens(version: latest))
        }
        guard text.utf8.count <= 9, let version = Int(text), version >= 1 else {
            throw APIError(
                status: .badRequest, code: "invalid_header", message: "RevSync-Schema-Version must be a schema version number (1 or more)")
        }
        return (version, try engine.lens(version: version))
    }
}
