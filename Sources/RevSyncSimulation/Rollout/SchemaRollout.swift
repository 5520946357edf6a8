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
        let v1 = try! base.changing(version: 1) { entity in entity }
        let v2 = try! v1.changing(version: 2) { entity throws(SchemaError) in
            switch entity.name {
            case "venues": return try entity.with(name: "grounds", renamedFrom: "venues")
            case "players":
                var attributes = entity.attributes.map { attribute in
                    attribute.name == "position"
                        ? attribute.with(name: "field_position", renamedFrom: "position") : attribute
                }
                attributes.append(Attribute(name: "shirt_size", type: .text, isRequired: true, defaultValue: "M"))
                return try entity.with(attributes: attributes)
            case "training_sessions":
                return try entity.with(
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "venue_id"
                            ? attribute.with(type: .reference(target: "grounds", onDelete: .deny)) : attribute
                    })
            default: return entity
            }
        }
        let v3 = try! v2.changing(version: 3) { entity throws(SchemaError) in
            switch entity.name {
            case "teams":
                return try entity.with(
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "name" ? attribute.with(name: "title", renamedFrom: "name") : attribute
                    })
            case "players":
                return try entity.with(attributes: entity.attributes.filter { $0.name != "height_cm" })
            case "training_sessions":
                return try entity.with(
                    attributes: entity.attributes.map { attribute in
                        attribute.name == "venue_id" ? attribute.with(name: "ground_id", renamedFrom: "venue_id") : attribute
                    })
            default: return entity
            }
        }
        return [v1, v2, v3]
    }()
}
