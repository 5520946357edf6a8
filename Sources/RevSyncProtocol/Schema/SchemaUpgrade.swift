/// What a database must do to hold data of `schema` when it was set up for `stored`: the
/// rules are the same for the server's stores and a device's local store.
///
/// Upgrades are additive: new entities get tables, new attributes get columns. Entities and
/// attributes that disappear keep their tables and columns (no data is dropped) but are no
/// longer used. Anything that would reinterpret stored data is refused with a message.
public struct SchemaUpgrade: Sendable {
    public enum Step: Sendable, Equatable {
        case createEntity(Entity)
        case addAttribute(Entity, Attribute)
        /// An existing entity switches to ``Staleness/attribute``: the server starts keeping who
        /// wrote each attribute when (devices keep nothing of it). Switching back needs no step.
        case trackAttributeWrites(Entity)
    }

    public let steps: [Step]

    /// Plans the upgrade.
    ///
    /// - Parameter recordCount: how many records an entity holds (to refuse adding a required
    ///   attribute to an entity that already has records).
    ///
    /// - Throws: ``SchemaUpgradeError`` when `schema` cannot be served from data set up for
    ///   `stored`, or what `recordCount` throws.
    public init(from stored: Schema?, to schema: Schema, recordCount: (Entity) throws -> Int) throws {
        guard let stored else {
            steps = schema.entities.map(Step.createEntity)
            return
        }
        if schema.version < stored.version {
            throw SchemaUpgradeError(
                "the database was last used with schema version \(stored.version), newer than this schema (version \(schema.version))")
        }
        if schema.version == stored.version {
            guard schema.jsonBytes() == stored.jsonBytes() else {
                throw SchemaUpgradeError(
                    "the schema differs from the one this database was created with, but both say version \(schema.version): raise \"version\" when you change the schema"
                )
            }
            steps = []
            return
        }
        var steps: [Step] = []
        for entity in schema.entities {
            guard let old = stored.entity(entity.name) else {
                steps.append(.createEntity(entity))
                continue
            }
            for attribute in entity.attributes {
                if let previous = old.attribute(attribute.name) {
                    guard previous.type == attribute.type || Self.sameColumn(previous.type, attribute.type) else {
                        throw SchemaUpgradeError(
                            "\(entity.name).\(attribute.name) changes type from \(previous.type.name) to \(attribute.type.name): stored values would be misread; add a new attribute instead"
                        )
                    }
                    if attribute.isRequired && !previous.isRequired, try recordCount(entity) > 0 {
                        throw SchemaUpgradeError(
                            "\(entity.name).\(attribute.name) becomes required, but \(entity.name) has records that may lack it")
                    }
                } else {
                    if attribute.isRequired, try recordCount(entity) > 0 {
                        throw SchemaUpgradeError(
                            "cannot add the required attribute \(entity.name).\(attribute.name): \(entity.name) already has records without it; add it as optional"
                        )
                    }
                    steps.append(.addAttribute(entity, attribute))
                }
            }
            if entity.staleness == .attribute && old.staleness != .attribute { steps.append(.trackAttributeWrites(entity)) }
        }
        self.steps = steps
    }

    /// Two references to the same target store the same thing, whatever their delete rules.
    private static func sameColumn(_ lhs: AttributeType, _ rhs: AttributeType) -> Bool {
        lhs.referenceTarget != nil && lhs.referenceTarget == rhs.referenceTarget
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
