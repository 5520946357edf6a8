import RevSyncProtocol

/// What a store must do to serve `schema` when it last served `stored`.
///
/// Upgrades are additive: new entities get tables, new attributes get columns. Entities and
/// attributes that disappear keep their tables and columns (no data is dropped) but are no
/// longer served. Anything that would reinterpret stored data is refused with a message.
struct SchemaUpgrade {
    enum Step: Equatable {
        case createEntity(Entity)
        case addAttribute(Entity, Attribute)
    }

    let steps: [Step]

    /// Plans the upgrade.
    ///
    /// - Parameter recordCount: how many records an entity holds (to refuse adding a required
    ///   attribute to an entity that already has records).
    init(from stored: Schema?, to schema: Schema, recordCount: (Entity) throws -> Int) throws {
        guard let stored else {
            steps = schema.entities.map(Step.createEntity)
            return
        }
        if schema.version < stored.version {
            throw StorageError.schemaMismatch(
                "the database was last used with schema version \(stored.version), newer than this schema (version \(schema.version))")
        }
        if schema.version == stored.version {
            guard schema.jsonBytes() == stored.jsonBytes() else {
                throw StorageError.schemaMismatch(
                    "the schema differs from the one this database was created with, but both say version \(schema.version): raise \"version\" when you change the schema")
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
                        throw StorageError.schemaMismatch(
                            "\(entity.name).\(attribute.name) changes type from \(previous.type.name) to \(attribute.type.name): stored values would be misread; add a new attribute instead")
                    }
                    if attribute.isRequired && !previous.isRequired, try recordCount(entity) > 0 {
                        throw StorageError.schemaMismatch(
                            "\(entity.name).\(attribute.name) becomes required, but \(entity.name) has records that may lack it")
                    }
                } else {
                    if attribute.isRequired, try recordCount(entity) > 0 {
                        throw StorageError.schemaMismatch(
                            "cannot add the required attribute \(entity.name).\(attribute.name): \(entity.name) already has records without it; add it as optional")
                    }
                    steps.append(.addAttribute(entity, attribute))
                }
            }
        }
        self.steps = steps
    }

    /// Two references to the same target store the same thing, whatever their delete rules.
    private static func sameColumn(_ lhs: AttributeType, _ rhs: AttributeType) -> Bool {
        lhs.referenceTarget != nil && lhs.referenceTarget == rhs.referenceTarget
    }
}

/// A failure of the store itself, as opposed to a refused request.
public enum StorageError: Error, Sendable, CustomStringConvertible {
    /// The schema cannot be served from this database.
    case schemaMismatch(String)
    /// The database holds something the server cannot read.
    case corrupt(String)
    /// The database cannot be reached.
    case unavailable(String)

    public var description: String {
        switch self {
        case .schemaMismatch(let message): "schema mismatch: \(message)"
        case .corrupt(let message): "database content is invalid: \(message)"
        case .unavailable(let message): "database unavailable: \(message)"
        }
    }
}
