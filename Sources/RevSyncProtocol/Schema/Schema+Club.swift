extension Schema {
    /// The demo schema's data model with the rules of a real club, each as `docs/schema.md`
    /// and the README say:
    ///
    /// - administrators run everything;
    /// - coaches change their own teams (`teams.coach_id` is them): the team, its players'
    ///   memberships, its training sessions and their attendance; they register new players;
    /// - coaches and medics record screenings in their own name (`recorded_by_id` is them) and
    ///   change only their own, with their measured values;
    /// - medics record players' dates of birth and heights, and delete no player;
    /// - players are otherwise the club's: only administrators change or delete them;
    /// - everyone writes notes in their own name (`author_id`) and changes only their own;
    /// - viewers read.
    ///
    /// Tokens are linked to `users` records (`revsync-server token create --role coach --user
    /// 7`); a user may change their own `users` record. `revsync-server --schema club` serves it.
    public static let club: Schema = {
        func rules(_ lists: [PermissionOperation: [PermissionEntry]]) -> EntityPermissions { EntityPermissions(rules: lists) }
        let admin = PermissionEntry(role: .admin)
        let coach = PermissionEntry(role: "coach")
        let medic = PermissionEntry(role: "medic")
        func own(_ role: Role, _ path: String) -> PermissionEntry {
            PermissionEntry(role: role, conditions: [UserCondition(path: path.split(separator: ".").map(String.init))])
        }
        let adminOnly = rules([.create: [admin], .update: [admin], .delete: [admin]])
        func everything(_ entries: [PermissionEntry]) -> EntityPermissions {
            rules([.create: entries, .update: entries, .delete: entries])
        }
        let ownScreening = [admin, own("coach", "recorded_by_id"), own("medic", "recorded_by_id")]
        let ownScreeningValues = [
            admin, own("coach", "screen_instance_id.recorded_by_id"), own("medic", "screen_instance_id.recorded_by_id"),
        ]
        let permissions: [String: EntityPermissions] = [
            "users": rules([.create: [admin], .update: [admin, own(.anyone, "id")], .delete: [admin]]),
            "seasons": adminOnly,
            "teams": rules([.create: [admin], .update: [admin, own("coach", "coach_id")], .delete: [admin]]),
            "players": rules([.create: [admin, coach], .update: [admin, medic], .delete: [admin]]),
            "team_players": everything([admin, own("coach", "team_id.coach_id")]),
            "venues": adminOnly,
            "training_sessions": everything([admin, own("coach", "team_id.coach_id")]),
            "attendances": everything([admin, own("coach", "training_session_id.team_id.coach_id")]),
            "screens": adminOnly,
            "screen_items": adminOnly,
            "screen_instances": rules([.create: ownScreening, .update: ownScreening, .delete: [admin]]),
            "screen_instance_items": everything(ownScreeningValues),
            "notes": everything([admin, own(.anyone, "author_id")]),
        ]
        // Who may set what on a player: a coach registers a player with a name, a position and
        // whether they are active; a medic records the date of birth and the height, and changes
        // nothing else.
        let playerWriters: [String: [Role]] = [
            "first_name": ["coach"], "last_name": ["coach"], "position": ["coach"], "active": ["coach"],
            "date_of_birth": ["medic"], "height_cm": ["medic"],
        ]
        let writers: [String: [String: [Role]]] = ["players": playerWriters]
        do {
            let entities = try demo.entities.map { entity throws(SchemaError) in
                try Entity(
                    name: entity.name,
                    attributes: entity.attributes.map { attribute in
                        Attribute(
                            name: attribute.name, type: attribute.type, isRequired: attribute.isRequired, summary: attribute.summary,
                            writeRoles: writers[entity.name]?[attribute.name])
                    },
                    summary: entity.summary, permissions: permissions[entity.name], swiftName: entity.swiftName)
            }
            return try Schema(version: 2, entities: entities, users: "users", roles: ["coach", "medic"])
        } catch {
            fatalError("the built-in club schema is invalid: \(error)")
        }
    }()

    /// The built-in schemas, by the name `--schema` takes.
    public static let builtIn: [String: Schema] = ["demo": .demo, "club": .club]
}
