/// How a device of one schema version reads and writes the stored layout (``SchemaLineage``):
/// its entity and attribute names mapped to the stored ones and back, the stored attributes
/// its version does not have left out of what it is sent, and their defaults given to the
/// records it creates.
///
/// For example, with version 2 renaming `players.nickname` to `players.alias`, a version 1
/// device's `{"nickname": "Flo"}` is stored as `alias`, and a version 2 device's write of
/// `alias` reaches the version 1 device as `nickname`.
public struct SchemaLens: Sendable {
    /// The device's schema version.
    public let version: Int
    /// The device's schema.
    public let schema: Schema
    /// The device's entities by their names, and by their stored names.
    private let byDeviceName: [String: EntityLens]
    private let byStoredName: [String: EntityLens]
    /// Whether nothing needs translating (the device's names and attributes are the stored ones).
    let isIdentity: Bool

    /// One entity as the device and the store name it.
    public struct EntityLens: Sendable {
        /// The entity's name in the device's version.
        public let deviceName: String
        /// Its name in the stored layout.
        public let storedName: String
        /// Attribute names: the device's to the stored ones, and back.
        let toStored: [String: String]
        let toDevice: [String: String]
        /// Stored attributes the device's version lacks that have a default (stored names).
        let defaults: [(String, Value)]
        /// For each attribute of the device's entity, in its order: its position in the stored
        /// entity (how a stored record is written in the device's version).
        public let storedPositions: [Int]
        /// The device's entity.
        public let entity: Entity

        /// The stored name of the device's attribute `name`.
        public func storedName(of name: String) -> String { toStored[name] ?? name }

        /// The device's name of the stored attribute `name`, if its version has it.
        public func deviceName(of name: String) -> String? { toDevice[name] }
    }

    init(version: Int, schema: Schema, placement: [EntityPlacement], layout: StoredLayout, storage: Schema) {
        var byDeviceName: [String: EntityLens] = [:]
        var byStoredName: [String: EntityLens] = [:]
        var identity = schema.entities.count == storage.entities.count
        for entityPlacement in placement {
            let entity = schema.entities[entityPlacement.entity]
            let storedName = layout.entities[entityPlacement.stored].name
            guard let storedEntity = storage.entity(storedName) else { continue }
            var toStored: [String: String] = [:]
            var toDevice: [String: String] = [:]
            var positions: [Int] = []
            for (position, attribute) in entity.attributes.enumerated() {
                let stored = layout.entities[entityPlacement.stored].attributes[entityPlacement.attributes[position]].name
                toStored[attribute.name] = stored
                toDevice[stored] = attribute.name
                positions.append(storedEntity.index(of: stored) ?? 0)
            }
            let defaults = storedEntity.attributes.compactMap { attribute -> (String, Value)? in
                guard toDevice[attribute.name] == nil, let value = attribute.defaultValue else { return nil }
                return (attribute.name, value)
            }
            if storedName != entity.name || storedEntity.attributes.map(\.name) != entity.attributes.map(\.name) {
                identity = false
            }
            let lens = EntityLens(
                deviceName: entity.name, storedName: storedName, toStored: toStored, toDevice: toDevice, defaults: defaults,
                storedPositions: positions, entity: entity)
            byDeviceName[entity.name] = lens
            byStoredName[storedName] = lens
        }
        self.version = version
        self.schema = schema
        self.byDeviceName = byDeviceName
        self.byStoredName = byStoredName
        self.isIdentity = identity
    }

    /// The lens of the stored entity `name`, if the device's version has it.
    public func entity(stored name: String) -> EntityLens? {
        byStoredName[name]
    }

    /// The stored name of the device's entity `name` (a name its version does not have stays
    /// as it is, for the schema to refuse).
    public func storedEntityName(_ name: String) -> String {
        byDeviceName[name]?.storedName ?? name
    }

    /// The device's entities in its version's order, with their lenses.
    public var entities: [EntityLens] {
        schema.entities.compactMap { byDeviceName[$0.name] }
    }

    // MARK: Translating

    /// A change set a device wrote, in stored names: entities and attributes renamed, and the
    /// defaults of the attributes its version lacks given to the records it creates. Names its
    /// version does not have stay as they are, for the schema to refuse.
    public func toStored(_ changeSet: ChangeSet) -> ChangeSet {
        var translated = changeSet
        for index in translated.changes.indices {
            let changes = translated.changes[index]
            guard let lens = byDeviceName[changes.entity] else { continue }
            translated.changes[index].entity = lens.storedName
            var attributes: [RecordID: RecordAttributes] = [:]
            attributes.reserveCapacity(changes.attributes.count)
            let creates = lens.defaults.isEmpty ? [] : Set(changes.create)
            for (id, record) in changes.attributes {
                var values: [String: Value] = [:]
                values.reserveCapacity(record.values.count + lens.defaults.count)
                for (name, value) in record.values { values[lens.toStored[name] ?? name] = value }
                if creates.contains(id) {
                    for (name, value) in lens.defaults where values[name] == nil { values[name] = value }
                }
                attributes[id] = RecordAttributes(revision: record.revision, oldID: record.oldID, values: values)
            }
            translated.changes[index].attributes = attributes
        }
        return translated
    }

    /// A change set the server sends, in the device's names: entities its version does not have
    /// left out, attributes renamed or left out, conflict entries and an erasure's records
    /// named as the device names them (an erasure keeps the names the device does not know).
    public func toDevice(_ changeSet: ChangeSet) -> ChangeSet {
        var translated = changeSet
        translated.changes = changeSet.changes.compactMap { changes in
            guard let lens = byStoredName[changes.entity] else { return nil }
            var copy = changes
            copy.entity = lens.deviceName
            for (id, record) in changes.attributes {
                var values: [String: Value] = [:]
                values.reserveCapacity(lens.toDevice.count)
                for (name, value) in record.values {
                    if let deviceName = lens.toDevice[name] { values[deviceName] = value }
                }
                copy.attributes[id] = RecordAttributes(revision: record.revision, oldID: record.oldID, values: values)
            }
            return copy
        }
        translated.conflicts = changeSet.conflicts.map { entry in
            var copy = entry
            if let lens = byStoredName[entry.type] {
                copy.type = lens.deviceName
                copy.attribute = entry.attribute.map { lens.toDevice[$0] ?? $0 }
            }
            return copy
        }
        // An erasure reaches what the device may hold under names its version no longer serves
        // (a dropped attribute's column): names it does not know stay as stored.
        if var erased = changeSet.erased {
            erased.records = erased.records.map { record in
                guard let lens = byStoredName[record.entity] else { return record }
                var copy = record
                copy.entity = lens.deviceName
                copy.attributes = record.attributes.map { names in names.map { lens.toDevice[$0] ?? $0 } }
                return copy
            }
            translated.erased = erased
        }
        return translated
    }
}
