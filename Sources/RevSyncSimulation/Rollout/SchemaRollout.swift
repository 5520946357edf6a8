public import RevSyncProtocol

/// Three schema versions of the simulator's data model, live at once while a fleet updates its
/// app over weeks (``SimulationConfiguration/rollout``):
///
/// - version 1: ``Schema/simulation`` as it is;
/// - version 2 renames the entity `venues` to `grounds` and `players.position` to
///   `field_position`, and adds `players.shirt_size`, required, with the default `"M"`;
/// - version 3 renames `teams.name` to `title` and `training_sessions.venue_id` to `ground_id`,
///   and drops `players.height_cm` (kept for the devices of versions 1 and 2).
public enum SchemaRollout {
    public static let versions: [Schema] = {
        let base = Schema.simulation
        let v1 = try! rebuild(base, version: 1) { entity in entity }
        let v2 = try! rebuild(v1, version: 2) { entity in
            switch entity.name {
            case "venues": return try Entity(copying: entity, name: "grounds", renamedFrom: "venues")
            case "players":
                var attributes = entity.attributes.map { attribute in
                    attribute.name == "position"
                        ? Attribute(copying: attribute, name: "field_position", renamedFrom: "position") : attribute
                }
                attributes.append(Attribute(name: "shirt_size", type: .text, isRequired: true, defaultValue: "M"))
                return try Entity(copying: entity, attributes: attributes)
            case "training_sessions":
                return try Entity(
                    copying: entity,
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "venue_id"
                            ? Attribute(copying: attribute, type: .reference(target: "grounds", onDelete: .deny)) : attribute
                    })
            default: return entity
            }
        }
        let v3 = try! rebuild(v2, version: 3) { entity in
            switch entity.name {
            case "teams":
                return try Entity(
                    copying: entity,
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "name" ? Attribute(copying: attribute, name: "title", renamedFrom: "name") : attribute
                    })
            case "players":
                return try Entity(copying: entity, attributes: entity.attributes.filter { $0.name != "height_cm" })
            case "training_sessions":
                return try Entity(
                    copying: entity,
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "venue_id" ? Attribute(copying: attribute, name: "ground_id", renamedFrom: "venue_id") : attribute
                    })
            default: return entity
            }
        }
        return [v1, v2, v3]
    }()

    private static func rebuild(_ schema: Schema, version: Int, _ change: (Entity) throws -> Entity) throws -> Schema {
        try Schema(version: version, entities: try schema.entities.map(change), users: schema.users, roles: schema.roles)
    }
}

extension Entity {
    /// The same entity with other attributes, or under another name.
    init(copying entity: Entity, name: String? = nil, attributes: [Attribute]? = nil, renamedFrom: String? = nil) throws {
        try self.init(
            name: name ?? entity.name, attributes: attributes ?? entity.attributes, summary: entity.summary,
            permissions: entity.permissions,
            swiftName: entity.swiftName, staleness: entity.staleness, renamedFrom: renamedFrom)
    }
}

extension Attribute {
    /// The same attribute under another name, or with another type.
    init(copying attribute: Attribute, name: String? = nil, type: AttributeType? = nil, renamedFrom: String? = nil) {
        self.init(
            name: name ?? attribute.name, type: type ?? attribute.type, isRequired: attribute.isRequired, summary: attribute.summary,
            writeRoles: attribute.writeRoles, renamedFrom: renamedFrom, defaultValue: attribute.defaultValue)
    }
}
