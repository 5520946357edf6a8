public import RevSyncProtocol

/// How a device's app speaks to the server: the schema version its requests name, how that
/// version reads the stored layout (its lens), and which version's digest its records' proofs
/// compare with. One value per request, decided once (``SyncEngine/speaking(_:)``).
public struct SpokenVersion: Sendable {
    /// The version its requests name (the latest without a `RevSync-Schema-Version` header).
    public let version: Int
    /// How it reads and writes the stored layout; `nil`: in the stored names.
    public let lens: SchemaLens?
    /// The version whose digest the device's proofs compare with (its own, every served version
    /// has one); `nil` for a version the data set never served, which is answered as the latest
    /// but whose records hash as its own schema says (nothing to compare).
    public let digestVersion: Int?

    public init(version: Int, lens: SchemaLens?, digestVersion: Int?) {
        self.version = version
        self.lens = lens
        self.digestVersion = digestVersion
    }
}

extension SyncEngine {
    /// How a device speaking schema `version` (`nil`: the latest) is read and answered.
    ///
    /// - Throws: ``SyncError/schemaAhead(device:server:)`` for a version newer than the latest,
    ///   ``SyncError/upgradeRequired(device:minimum:)`` for one older than the schema's
    ///   `minimumVersion`.
    public func speaking(_ version: Int?) throws(SyncError) -> SpokenVersion {
        let version = version ?? lineage.latest.version
        let lens = try lens(version: version)
        return SpokenVersion(version: version, lens: lens, digestVersion: lineage.schema(version: version) != nil ? version : nil)
    }

    /// The latest version, as a request without a version header speaks it.
    public var speakingLatest: SpokenVersion {
        let latest = lineage.latest.version
        return SpokenVersion(version: latest, lens: lineage.lens(version: latest), digestVersion: latest)
    }
}
