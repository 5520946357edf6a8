import RevSyncProtocol

/// Turns the temporary IDs of one device into permanent ones, for the length of one request.
///
/// A temporary ID is resolved from, in order: the change set being applied (its own creates),
/// then the device's ID map, which holds every create the server committed for the device,
/// in this request or an earlier one. Lookups are cached for the request.
final class IDResolver {
    private let device: Int64
    private var known: [RecordID: IDMapping] = [:]
    private var unknown: Set<RecordID> = []

    init(device: Int64) {
        self.device = device
    }

    /// The permanent ID of `id` if it is a record of `entity`; positive IDs are returned as
    /// they are. `nil` when the temporary ID was never committed, or names another entity.
    func resolve(_ id: RecordID, entity: String, reader: any StorageReader) throws -> RecordID? {
        guard id.isTemporary else { return id }
        return try mapping(of: id, reader: reader).flatMap { $0.entity == entity ? $0.permanentID : nil }
    }

    /// The mapping of a temporary ID, whatever its entity.
    func mapping(of id: RecordID, reader: any StorageReader) throws -> IDMapping? {
        if let mapping = known[id] { return mapping }
        if unknown.contains(id) { return nil }
        if let mapping = try reader.mapping(device: device, temporaryID: id) {
            known[id] = mapping
            return mapping
        }
        unknown.insert(id)
        return nil
    }

    /// Remembers mappings of a change set that committed.
    func remember(_ mappings: [IDMapping]) {
        for mapping in mappings {
            known[mapping.temporaryID] = mapping
            unknown.remove(mapping.temporaryID)
        }
    }
}
