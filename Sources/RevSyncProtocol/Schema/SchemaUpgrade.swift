/// What a database must do to hold data of `schema` when it was set up for `stored`: the
/// rules are the same for the server's stores and a device's local store.
///
/// New entities get tables, new attributes columns (filled with their default, if any), renamed
/// ones (`"renamedFrom"`) are renamed. Entities and attributes that disappear keep their tables
/// and columns (no data is dropped). Anything that would reinterpret stored data is refused
/// with a message.
public struct SchemaUpgrade: Sendable {
    public enum Step: Sendable, Equatable {
        case createEntity(Entity)
        /// A new attribute: a column, which existing records fill with the attribute's default
        /// (``Attribute/defaultValue``), if it has one, or null.
        case addAttribute(Entity, Attribute)
        /// A renamed entity (`"renamedFrom"`): its table and everything naming it follow.
        case renameEntity(from: String, to: String)
        /// A renamed attribute of `entity` (named as this version names it).
        case renameAttribute(entity: String, from: String, to: String)
        /// An attribute becomes required: existing records without it get its default.
        case fillDefault(Entity, Attribute)
        /// An existing entity switches to ``Staleness/attribute``: the server starts keeping who
        /// wrote each attribute when (devices keep nothing of it). Switching back needs no step.
        case trackAttributeWrites(Entity)
    }

    public let steps: [Step]
    /// Every version the data set has served, this one last: what the stores keep.
    public let lineage: SchemaLineage

    /// Plans the upgrade of a store that holds data of `stored` (`nil`: an empty database).
    ///
    /// - Parameter recordCount: how many records an entity holds (to refuse adding a required
    ///   attribute without a default to an entity that already has records).
    ///
    /// - Throws: ``SchemaUpgradeError`` when `schema` cannot be served from data set up for
    ///   `stored`, or what `recordCount` throws.
    public init(from stored: Schema?, to schema: Schema, recordCount: (Entity) throws -> Int) throws {
        try self.init(from: stored.map { [$0] } ?? [], to: schema, translating: false, recordCount: recordCount)
    }

    /// Plans the upgrade of a device's store from `stored` to `schema` through the versions in
    /// between (`through`, oldest first, as the server serves them at `GET /schema?version=V`):
    /// a rename names the version before it, so a store that skips versions follows the renames
    /// of each.
    public init(from stored: Schema, through intermediates: [Schema], to schema: Schema, recordCount: (Entity) throws -> Int) throws {
        try self.init(from: [stored], through: intermediates, to: schema, translating: false, recordCount: recordCount)
    }

    /// Plans the upgrade of a store that served the versions `stored` (oldest first; empty: an
    /// empty database) to `schema`.
    ///
    /// - Parameters:
    ///   - translating: whether devices of every version from `minimumVersion` on are served
    ///     (the server): a change that cannot be translated both ways is refused
    ///     (``SchemaLineage``). A device's store holds one version and translates nothing.
    ///   - recordCount: how many records an entity holds.
    public init(
        from stored: [Schema], through intermediates: [Schema] = [], to schema: Schema, translating: Bool,
        recordCount: (Entity) throws -> Int
    ) throws {
        guard let last = stored.last else {
            steps = schema.entities.map(Step.createEntity)
            lineage = try SchemaLineage([schema])
            return
        }
        if schema.version < last.version {
            throw SchemaUpgradeError(
                "the database was last used with schema version \(last.version), newer than this schema (version \(schema.version))")
        }
        if schema.version == last.version {
            guard schema.jsonBytes() == last.jsonBytes() else {
                throw SchemaUpgradeError(
                    "the schema differs from the one this database was created with, but both say version \(schema.version): raise \"version\" when you change the schema"
                )
            }
            steps = []
            lineage = try SchemaLineage(translating ? stored : [schema])
            return
        }
        let between = intermediates.filter { $0.version > last.version && $0.version < schema.version }
        lineage = try SchemaLineage(translating ? stored + [schema] : [last] + between + [schema], checking: translating)
        var before = StoredLayout()
        var previous: Schema?
        for version in translating ? stored : [last] {
            _ = try before.place(version, previous: previous)
            previous = version
        }
        var after = before
        for version in between {
            _ = try after.place(version, previous: previous)
            previous = version
        }
        let placements = try after.place(schema, previous: previous)
        var steps: [Step] = []
        for (index, entity) in before.entities.enumerated() where entity.name != after.entities[index].name {
            steps.append(.renameEntity(from: entity.name, to: after.entities[index].name))
        }
        for placement in placements {
            let entity = schema.entities[placement.entity]
            guard placement.stored < before.entities.count else {
                steps.append(.createEntity(translating ? lineage.storage.entity(entity.name) ?? entity : entity))
                continue
            }
            let known = before.entities[placement.stored].attributes
            for (index, attribute) in known.enumerated() where attribute.name != after.entities[placement.stored].attributes[index].name {
                steps.append(
                    .renameAttribute(entity: entity.name, from: attribute.name, to: after.entities[placement.stored].attributes[index].name)
                )
            }
            let old = last.entities.first { $0.name == before.entities[placement.stored].name }
            for (position, attribute) in entity.attributes.enumerated() {
                let slot = placement.attributes[position]
                if slot >= known.count {
                    if attribute.isRequired, attribute.defaultValue == nil, try recordCount(entity) > 0 {
                        throw SchemaUpgradeError(
                            "cannot add the required attribute \(entity.name).\(attribute.name): \(entity.name) already has records without it; give it a \"default\" or add it as optional"
                        )
                    }
                    steps.append(.addAttribute(entity, attribute))
                } else if attribute.isRequired, let previous = old?.attributes.first(where: { $0.name == known[slot].name }),
                    !previous.isRequired, try recordCount(entity) > 0
                {
                    guard attribute.defaultValue != nil else {
                        throw SchemaUpgradeError(
                            "\(entity.name).\(attribute.name) becomes required, but \(entity.name) has records that may lack it; give it a \"default\""
                        )
                    }
                    steps.append(.fillDefault(entity, attribute))
                }
            }
            if entity.staleness == .attribute && old?.staleness != .attribute { steps.append(.trackAttributeWrites(entity)) }
        }
        self.steps = steps
    }
}

/// Why a schema cannot be served from data set up for another schema.
public struct SchemaUpgradeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { "schema mismatch: \(message)" }
}
