extension Schema {
    /// The demo schema's data model with the rules of a real club: administrators run
    /// everything; coaches change their own teams (the team, its players' memberships, its
    /// training), record attendance and screenings; medics record screenings and players'
    /// dates of birth but delete no player; everyone writes notes and changes only their own;
    /// viewers read. Tokens are linked to `users` records (`revsync-server token create --role
    /// coach --user 7`). `revsync-server --schema club` serves it.
    public static let club: Schema = {
        func rules(_ lists: [PermissionOperation: [PermissionEntry]]) -> EntityPermissions { EntityPermissions(rules: lists) }
        let admin = PermissionEntry(role: .admin)
        let coach = PermissionEntry(role: "coach")
        let medic = PermissionEntry(role: "medic")
        let member = PermissionEntry(role: .member)
        func own(_ role: Role, _ path: String) -> PermissionEntry {
            PermissionEntry(role: role, conditions: [UserCondition(path: path.split(separator: ".").map(String.init))])
        }
        let adminOnly = rules([.create: [admin], .update: [admin], .delete: [admin]])
        let coachOfTheTeam = [admin, own("coach", "team_id.coach_id")]
        let permissions: [String: EntityPermissions] = [
            "users": rules([.create: [admin], .update: [admin, own(.anyone, "id")], .delete: [admin]]),
            "seasons": adminOnly,
            "teams": rules([.create: [admin], .update: [admin, own("coach", "coach_id")], .delete: [admin]]),
            "players": rules([.create: [admin, coach], .update: [admin, coach, medic], .delete: [admin]]),
            "team_players": rules([.create: coachOfTheTeam, .update: coachOfTheTeam, .delete: coachOfTheTeam]),
            "venues": adminOnly,
            "training_sessions": rules([.create: coachOfTheTeam, .update: coachOfTheTeam, .delete: coachOfTheTeam]),
            "attendances": rules([.create: [admin, coach], .update: [admin, coach], .delete: [admin, coach]]),
            "screens": adminOnly,
            "screen_items": adminOnly,
            "screen_instances": rules([
                .create: [admin, coach, medic], .update: [admin, own("coach", "recorded_by_id"), own("medic", "recorded_by_id")],
                .delete: [admin],
            ]),
            "screen_instance_items": rules([.create: [admin, coach, medic], .update: [admin, coach, medic], .delete: [admin, medic]]),
            "notes": rules([
                .create: [admin, coach, medic, member], .update: [admin, own(.anyone, "author_id")],
                .delete: [admin, own(.anyone, "author_id")],
            ]),
        ]
        let writers: [String: [String: [Role]]] = ["players": ["date_of_birth": ["medic"]]]
        do {
            let entities = try demo.entities.map { entity throws(SchemaError) in
                try Entity(
                    name: entity.name,
                    attributes: entity.attributes.map { attribute in
                        Attribute(
                            name: attribute.name, type: attribute.type, isRequired: attribute.isRequired, summary: attribute.summary,
                            writeRoles: writers[entity.name]?[attribute.name])
                    },
                    summary: entity.summary, permissions: permissions[entity.name])
            }
            return try Schema(version: 1, entities: entities, users: "users", roles: ["coach", "medic"])
        } catch {
            fatalError("the built-in club schema is invalid: \(error)")
        }
    }()

    /// The built-in schemas, by the name `--schema` takes.
    public static let builtIn: [String: Schema] = ["demo": .demo, "club": .club]
}
