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
        guard let text = headers[.revSyncDeviceSchemaVersion] else { return engine.speakingLatest }
        guard text.utf8.count <= 9, let version = Int(text), version >= 1 else {
            throw APIError(
                status: .badRequest, code: "invalid_header", message: "RevSync-Schema-Version must be a schema version number (1 or more)")
        }
        return try engine.speaking(version)
    }
}
