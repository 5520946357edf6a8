/// Every schema version a data set has served, oldest first, and how each one maps onto the
/// stored layout: the server reads a device's change sets in the device's version and answers
/// in it (``SchemaLens``).
///
/// Entities and attributes keep their identity through renames: an entity or attribute whose
/// name the version before did not have, with `"renamedFrom": "old"`, is the one the version
/// before called `old`. The stored layout (``storage``) is the latest version plus every
/// attribute an older version still served had and the latest removed, under its latest name,
/// optional and with the write rule of the last version that had it: a value a device of that
/// version writes is kept and served to
/// the versions that have it.
///
/// What cannot be translated both ways is refused, naming it, with ``SchemaUpgradeError``:
/// a `renamedFrom` naming nothing of the version before, a type change, an entity removed
/// while a version that has it is served, an attribute required by the latest version that a
/// served version lacks (without a default) or leaves optional, or has required while the latest
/// makes it optional. Raising `minimumVersion` retires the versions in the way.
public struct SchemaLineage: Sendable {
    /// The versions, oldest first; the last is the one served at `GET /schema`.
    public let versions: [Schema]
    /// The stored layout: the latest version plus the attributes it removed that an older
    /// version still has (the engine works in it).
    public let storage: Schema
    /// The oldest version devices may speak (the schema's `minimumVersion`; 1 without one).
    public let minimumVersion: Int
    /// The stored names each version's entities and attributes have, by version.
    private let lenses: [Int: SchemaLens]

    /// The latest version.
    public var latest: Schema { versions[versions.count - 1] }

    /// The versions devices may speak, oldest first.
    public var servedVersions: [Int] { versions.map(\.version).filter { $0 >= minimumVersion } }

    /// Builds the lineage of `versions` (ascending, each the version after the one before in
    /// the data set's life, though not necessarily by one).
    ///
    /// - Throws: ``SchemaUpgradeError`` naming the first change that cannot be translated
    ///   both ways.
    ///
    /// - Parameter checking: whether every version from `minimumVersion` on is served, so must
    ///   translate (the server); a device's store translates nothing.
    public init(_ versions: [Schema], checking: Bool = true) throws(SchemaUpgradeError) {
        precondition(!versions.isEmpty, "a lineage has at least one version")
        for (earlier, later) in zip(versions, versions.dropFirst()) where later.version <= earlier.version {
            throw SchemaUpgradeError("schema versions must ascend: \(later.version) follows \(earlier.version)")
        }
        let latest = versions[versions.count - 1]
        let minimum = latest.minimumVersion ?? 1
        var layout = StoredLayout()
        var placements: [[EntityPlacement]] = []
        for (position, schema) in versions.enumerated() {
            placements.append(try layout.place(schema, previous: position == 0 ? nil : versions[position - 1]))
        }
        let served = checking ? versions.indices.filter { versions[$0].version >= minimum } : [versions.count - 1]
        let latestPlacement = placements[placements.count - 1]
        try Self.checkTranslatable(
            versions: versions, placements: placements, served: served, latestPlacement: latestPlacement, layout: layout)
        let storage = try layout.storageSchema(latest: latest, placement: latestPlacement, keeping: served.map { placements[$0] })
        var lenses: [Int: SchemaLens] = [:]
        for index in served {
            let lens = SchemaLens(
                version: versions[index].version, schema: versions[index], placement: placements[index], layout: layout,
                storage: storage)
            if !lens.isIdentity { lenses[versions[index].version] = lens }
        }
        self.versions = versions
        self.storage = storage
        self.minimumVersion = minimum
        self.lenses = lenses
    }

    /// The lineage of a data set that served one version: nothing to translate, so nothing to
    /// refuse (a failure here is a bug, and stops the process with what it was).
    public init(single schema: Schema) {
        do {
            try self.init([schema])
        } catch {
            preconditionFailure("a lineage of one version has nothing to translate, yet: \(error)")
        }
    }

    /// The schema of `version`, if the data set served it.
    public func schema(version: Int) -> Schema? {
        versions.first { $0.version == version }
    }

    /// How a device of `version` reads and writes the stored layout; `nil` when its names and
    /// attributes are the stored ones (nothing to translate), or when the data set never served
    /// that version.
    public func lens(version: Int) -> SchemaLens? {
        lenses[version]
    }

    /// The names of version `from` as version `to` calls them: entities and attributes both
    /// versions have (an app moving from one to the other, a simulator naming what it edits).
    public func renames(from: Int, to: Int) -> SchemaRenames {
        var renames = SchemaRenames([])
        guard let source = schema(version: from), let target = schema(version: to) else { return renames }
        for entity in source.entities {
            let storedName = lens(version: from)?.storedEntityName(entity.name) ?? entity.name
            let toLens = lens(version: to)
            guard let targetName = toLens.map({ $0.entity(stored: storedName)?.deviceName }) ?? storedName,
                let targetEntity = target.entity(targetName)
            else { continue }
            if targetName != entity.name { renames.entities[entity.name] = targetName }
            for attribute in entity.attributes {
                let stored = lens(version: from)?.entity(stored: storedName)?.storedName(of: attribute.name) ?? attribute.name
                let name = toLens?.entity(stored: storedName)?.deviceName(of: stored) ?? stored
                if name != attribute.name, targetEntity.attribute(name) != nil {
                    renames.attributes[targetName, default: [:]][attribute.name] = name
                }
            }
        }
        return renames
    }

    /// What the latest version requires must be translatable from every served version, and
    /// every entity a served version has must still be stored.
    private static func checkTranslatable(
        versions: [Schema], placements: [[EntityPlacement]], served: [Int], latestPlacement: [EntityPlacement], layout: StoredLayout
    ) throws(SchemaUpgradeError) {
        let latest = versions[versions.count - 1]
        let latestEntities = Set(latestPlacement.map(\.stored))
        for index in served where index != versions.count - 1 {
            let schema = versions[index]
            for placement in placements[index] where !latestEntities.contains(placement.stored) {
                throw SchemaUpgradeError(
                    "version \(latest.version) removes the entity \(schema.entities[placement.entity].name), which version \(schema.version) still has: its devices' writes would have nowhere to go; raise \"minimumVersion\" above \(schema.version) to remove it"
                )
            }
        }
        for placement in latestPlacement {
            let entity = latest.entities[placement.entity]
            for (attributeIndex, attribute) in entity.attributes.enumerated() {
                let stored = placement.attributes[attributeIndex]
                for index in served where index != versions.count - 1 {
                    let schema = versions[index]
                    guard let older = placements[index].first(where: { $0.stored == placement.stored }) else { continue }
                    let olderEntity = schema.entities[older.entity]
                    let olderAttribute = older.attributes.firstIndex(of: stored).map { olderEntity.attributes[$0] }
                    let name = "\(entity.name).\(attribute.name)"
                    if attribute.isRequired, attribute.defaultValue == nil, olderAttribute == nil {
                        throw SchemaUpgradeError(
                            "\(name) is required, and version \(schema.version) does not have it: its devices could not create \(entity.name); give it a \"default\", add it as optional, or raise \"minimumVersion\" above \(schema.version)"
                        )
                    }
                    if attribute.isRequired, let olderAttribute, !olderAttribute.isRequired {
                        throw SchemaUpgradeError(
                            "\(name) becomes required, but version \(schema.version) has it optional: its devices may leave it null; raise \"minimumVersion\" above \(schema.version) first"
                        )
                    }
                    if !attribute.isRequired, let olderAttribute, olderAttribute.isRequired {
                        throw SchemaUpgradeError(
                            "\(name) becomes optional, but version \(schema.version) requires it: its devices could not read a record without it; raise \"minimumVersion\" above \(schema.version) first"
                        )
                    }
                }
            }
        }
    }
}

/// Where one entity of a version sits in the stored layout: its stored entity and, for each of
/// its attributes in order, the stored attribute.
struct EntityPlacement: Sendable {
    /// The entity's position in its version.
    let entity: Int
    /// The stored entity's position in the layout.
    let stored: Int
    /// The stored attribute of each of the entity's attributes (positions in the stored entity).
    let attributes: [Int]
}

/// The stored layout as the versions are read, oldest first: every entity and attribute ever
/// served, each under the name its newest version gives it.
struct StoredLayout: Sendable {
    struct StoredEntity: Sendable {
        var name: String
        var attributes: [StoredAttribute]
    }

    struct StoredAttribute: Sendable {
        var name: String
        /// The newest definition (references name the stored entity by its position).
        var attribute: Attribute
        var target: Int?
    }

    var entities: [StoredEntity] = []

    /// Places every entity and attribute of `schema`, renaming, adding, and checking types.
    mutating func place(_ schema: Schema, previous: Schema?) throws(SchemaUpgradeError) -> [EntityPlacement] {
        let storedOf = try placeEntities(schema, previous: previous)
        var placements: [EntityPlacement] = []
        for (index, entity) in schema.entities.enumerated() {
            placements.append(
                try placeAttributes(of: entity, at: index, in: storedOf[index], previous: previous, version: schema.version))
        }
        try settleTypes(schema, placements)
        return placements
    }

    /// The stored entity of each entity of `schema`: renames first (a rename frees its old name
    /// for a new entity), then names, then new entities.
    private mutating func placeEntities(_ schema: Schema, previous: Schema?) throws(SchemaUpgradeError) -> [Int] {
        var storedOf = [Int?](repeating: nil, count: schema.entities.count)
        var claimed = Set<Int>()
        if let previous {
            for (index, entity) in schema.entities.enumerated() {
                guard let from = entity.renamedFrom else { continue }
                if previous.entity(from) != nil, previous.entity(entity.name) == nil, entities.contains(where: { $0.name == entity.name }) {
                    throw SchemaUpgradeError(Self.renameOntoRetiredName("entities.\(entity.name)", from: from, version: schema.version))
                }
                guard !entities.contains(where: { $0.name == entity.name }) else { continue }
                guard previous.entity(from) != nil, schema.entity(from) == nil,
                    let stored = entities.firstIndex(where: { $0.name == from })
                else {
                    throw SchemaUpgradeError(
                        "entities.\(entity.name).renamedFrom: version \(previous.version) has no entity \"\(from)\" to rename (or version \(schema.version) still has it)"
                    )
                }
                entities[stored].name = entity.name
                storedOf[index] = stored
                claimed.insert(stored)
            }
        }
        for (index, entity) in schema.entities.enumerated() where storedOf[index] == nil {
            if let stored = entities.firstIndex(where: { $0.name == entity.name }), !claimed.contains(stored) {
                storedOf[index] = stored
            } else {
                entities.append(StoredEntity(name: entity.name, attributes: []))
                storedOf[index] = entities.count - 1
            }
            claimed.insert(storedOf[index]!)
        }
        return storedOf.map { $0! }
    }

    /// The stored attribute of each attribute of `entity` (the schema's `index`th), in its
    /// stored entity `stored`: renames first, then names, then new attributes.
    private mutating func placeAttributes(
        of entity: Entity, at index: Int, in stored: Int, previous: Schema?, version: Int
    ) throws(SchemaUpgradeError) -> EntityPlacement {
        let previousEntity = previous.flatMap { previous in
            previous.entities.first { $0.name == entity.name || $0.name == entity.renamedFrom }
        }
        var attributeOf = [Int?](repeating: nil, count: entity.attributes.count)
        var taken = Set<Int>()
        for (position, attribute) in entity.attributes.enumerated() {
            guard let from = attribute.renamedFrom, let previousEntity else { continue }
            let named = entities[stored].attributes.contains(where: { $0.name == attribute.name })
            if named, previousEntity.attribute(from) != nil, previousEntity.attribute(attribute.name) == nil {
                throw SchemaUpgradeError(
                    Self.renameOntoRetiredName(
                        "entities.\(entity.name).attributes.\(attribute.name)", from: from, version: version))
            }
            guard !named else { continue }
            guard previousEntity.attribute(from) != nil, entity.attribute(from) == nil,
                let found = entities[stored].attributes.firstIndex(where: { $0.name == from })
            else {
                throw SchemaUpgradeError(
                    "entities.\(entity.name).attributes.\(attribute.name).renamedFrom: version \(previous!.version) has no attribute \"\(from)\" of \(previousEntity.name) to rename (or version \(version) still has it)"
                )
            }
            entities[stored].attributes[found].name = attribute.name
            attributeOf[position] = found
            taken.insert(found)
        }
        for (position, attribute) in entity.attributes.enumerated() where attributeOf[position] == nil {
            if let found = entities[stored].attributes.firstIndex(where: { $0.name == attribute.name }), !taken.contains(found) {
                attributeOf[position] = found
            } else {
                entities[stored].attributes.append(StoredAttribute(name: attribute.name, attribute: attribute, target: nil))
                attributeOf[position] = entities[stored].attributes.count - 1
            }
            taken.insert(attributeOf[position]!)
        }
        return EntityPlacement(entity: index, stored: stored, attributes: attributeOf.map { $0! })
    }

    /// Checks the types (reference targets compared by identity) and keeps the newest
    /// definitions.
    private mutating func settleTypes(_ schema: Schema, _ placements: [EntityPlacement]) throws(SchemaUpgradeError) {
        for placement in placements {
            let entity = schema.entities[placement.entity]
            for (position, attribute) in entity.attributes.enumerated() {
                let target = attribute.referenceTarget.flatMap { name in
                    placements.first { schema.entities[$0.entity].name == name }?.stored
                }
                let slot = placement.attributes[position]
                let known = entities[placement.stored].attributes[slot]
                if known.attribute.type.name != attribute.type.name || (known.target != nil && known.target != target) {
                    throw SchemaUpgradeError(
                        "\(entity.name).\(attribute.name) changes type from \(known.attribute.type.name) to \(attribute.type.name): stored values would be misread; add a new attribute instead"
                    )
                }
                entities[placement.stored].attributes[slot].attribute = attribute
                entities[placement.stored].attributes[slot].target = target
            }
        }
    }

    /// The refusal of a rename, in `version`, onto a name the data set used before for something
    /// else (dropped since): the stored layout keeps what was dropped under its name, with its
    /// values, so the renamed one and the dropped one would be read as one.
    static func renameOntoRetiredName(_ path: String, from: String, version: Int) -> String {
        let name = path.split(separator: ".").last.map(String.init) ?? path
        return
            "\(path).renamedFrom: version \(version) renames \"\(from)\" to \"\(name)\", a name an earlier version gave to something it dropped since; its values are still stored under that name, and the two would be read as one: choose a name the data set never had"
    }

    /// The latest version's entities, each followed by the attributes it removed that a
    /// served version (`keeping`) still has: optional, with the write rule of the last version
    /// that had them, a reference among them
    /// clearing itself when its target is deleted.
    func storageSchema(
        latest: Schema, placement: [EntityPlacement], keeping: [[EntityPlacement]]
    ) throws(SchemaUpgradeError)
        -> Schema
    {
        var entitiesOut: [Entity] = []
        var changed = false
        for entityPlacement in placement {
            let entity = latest.entities[entityPlacement.entity]
            var attributes = entity.attributes
            let live = Set(entityPlacement.attributes)
            var kept = Set<Int>()
            for version in keeping {
                for other in version where other.stored == entityPlacement.stored {
                    kept.formUnion(other.attributes.filter { !live.contains($0) })
                }
            }
            for slot in kept.sorted() {
                let stored = entities[entityPlacement.stored].attributes[slot]
                var type = stored.attribute.type
                if let target = stored.target {
                    guard placement.contains(where: { $0.stored == target }) else { continue }
                    type = .reference(target: entities[target].name, onDelete: .nullify)
                }
                // The write rule of the last version that had it (a role the latest no longer
                // declares drops out: what is left may be only admin).
                let writeRoles = stored.attribute.writeRoles?.filter { latest.knows($0) }
                attributes.append(
                    Attribute(name: stored.name, type: type, summary: stored.attribute.summary, writeRoles: writeRoles, isRetained: true))
                changed = true
            }
            do {
                entitiesOut.append(try entity.with(attributes: attributes))
            } catch {
                throw SchemaUpgradeError("\(error)")
            }
        }
        guard changed else { return latest }
        do {
            return try Schema(
                version: latest.version, entities: entitiesOut, users: latest.users, roles: latest.roles,
                minimumVersion: latest.minimumVersion, maxOfflineDays: latest.maxOfflineDays)
        } catch {
            throw SchemaUpgradeError("\(error)")
        }
    }
}
