import RevSyncProtocol
import Testing

/// Roles and permissions in the schema file: read, checked, written back the same.
@Suite struct PermissionSchemaTests {
    static let example = """
        {
          "version": 2,
          "users": "users",
          "roles": ["coach", "medic"],
          "entities": {
            "users": { "attributes": { "name": { "type": "text" } } },
            "teams": {
              "attributes": { "name": {"type": "text", "required": true},
                              "coach_id": {"type": "reference", "target": "users", "onDelete": "nullify"} },
              "permissions": {
                "create": ["admin"],
                "update": ["admin", {"role": "coach", "where": {"coach_id": "$user"}}],
                "delete": ["admin"]
              }
            },
            "team_players": {
              "attributes": { "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"} },
              "permissions": {
                "create": ["admin", {"role": "coach", "where": {"team_id.coach_id": "$user"}}],
                "delete": [{"role": "*", "where": {"team_id.coach_id": "$user"}}]
              }
            },
            "players": {
              "attributes": { "date_of_birth": {"type": "date", "write": ["admin", "medic"]} }
            }
          }
        }
        """

    @Test func theIssuesExampleLoadsAndWritesBackTheSame() throws {
        let schema = try Schema(json: Array(Self.example.utf8))
        #expect(schema.users == "users")
        #expect(schema.roles == ["coach", "medic"])
        #expect(schema.allRoles.map(\.rawValue) == ["admin", "member", "viewer", "coach", "medic"])
        let teams = try #require(schema.entity("teams"))
        #expect(
            teams.permissions?.rules[.update] == [
                PermissionEntry(role: .admin), PermissionEntry(role: "coach", conditions: [UserCondition(path: ["coach_id"])]),
            ])
        #expect(schema.entity("team_players")?.permissions?.rules[.update] == nil)
        #expect(schema.entity("team_players")?.permissions?.rules[.delete]?.first?.role == .anyone)
        #expect(schema.entity("players")?.attribute("date_of_birth")?.writeRoles == [.admin, "medic"])
        #expect(schema.hasPermissions && !Schema.demo.hasPermissions)
        let again = try Schema(json: schema.jsonBytes())
        #expect(again == schema)
        let club = try Schema(json: Schema.club.jsonBytes())
        #expect(Schema.club.hasPermissions && club == Schema.club)
    }

    @Test(arguments: [
        (#""roles": ["admin"]"#, "roles", "built-in"),
        (#""roles": ["Coach"]"#, "roles", "not a valid role name"),
        (#""users": "people""#, "users", "not an entity"),
        (#""update": ["admin", "captain"]"#, "entities.teams.permissions.update", "unknown role \"captain\""),
        (#""update": ["*"]"#, "entities.teams.permissions.update", "needs a \"where\""),
        (#""coach_id": "$user"}}], "x": 1"#, "entities.teams.permissions.x", "unknown operation"),
    ])
    func brokenRulesAreNamedWithTheirPath(replacement: String, path: String, message: String) throws {
        var text = Self.example
        switch replacement {
        case let r where r.hasPrefix(#""roles""#): text = text.replacing(#""roles": ["coach", "medic"]"#, with: r)
        case let r where r.hasPrefix(#""users""#): text = text.replacing(#""users": "users""#, with: r)
        case let r where r.hasPrefix(#""update""#):
            text = text.replacing(#""update": ["admin", {"role": "coach", "where": {"coach_id": "$user"}}]"#, with: r)
        default: text = text.replacing(#""coach_id": "$user"}}],"#, with: replacement + ",")
        }
        #expect(text != Self.example, "the replacement found what it replaces")
        #expect {
            try Schema(json: Array(text.utf8))
        } throws: { error in
            guard let error = error as? SchemaError else { return false }
            return error.path == path && error.message.contains(message)
        }
    }

    @Test func pathsAndUserConditionsAreChecked() {
        let cases: [(String, String)] = [
            (#"{"role": "coach", "where": {"colour": "$user"}}"#, "not an attribute of teams"),
            (#"{"role": "coach", "where": {"name.coach_id": "$user"}}"#, "is not a reference of teams"),
            (#"{"role": "coach", "where": {"coach_id.shoe_size": "$user"}}"#, "users has no attribute \"shoe_size\""),
            (#"{"role": "coach", "where": {"coach_id": 7}}"#, "compares with \"$user\" only"),
            (#"{"role": "coach", "where": {"a.b.c": "$user"}}"#, "\"a\" in \"a.b.c\" is not a reference of teams"),
            (
                #"{"role": "coach", "where": {"coach_id.first_name.x": "$user"}}"#,
                "\"first_name\" in \"coach_id.first_name.x\" is not a reference of users"
            ),
            (#"{"role": "coach", "where": {"a.b.c.d.e": "$user"}}"#, "follows more than 3 references"),
        ]
        for (entry, message) in cases {
            let text = Self.example.replacing(#"{"role": "coach", "where": {"coach_id": "$user"}}"#, with: entry)
            #expect {
                try Schema(json: Array(text.utf8))
            } throws: { error in
                (error as? SchemaError)?.message.contains(message) == true
            }
        }
        let withoutUsers = Self.example.replacing(#""users": "users","#, with: "")
        #expect {
            try Schema(json: Array(withoutUsers.utf8))
        } throws: { error in
            (error as? SchemaError)?.message.contains("needs the schema's \"users\"") == true
        }
    }

    @Test func theEvaluatorJudgesRolesConditionsAndWrites() throws {
        let schema = try Schema(json: Array(Self.example.utf8))
        let rules = PermissionRules(schema: schema)
        let teams = try #require(schema.entity("teams"))
        let links = try #require(schema.entity("team_players"))
        let team: [String: Value] = ["id": 3, "name": "U12", "coach_id": 7]
        let values: PermissionRules.Values = { team[$0] ?? .null }
        let lookup: PermissionRules.Lookup = { entity, id in entity == "teams" && id == 3 ? values : nil }
        func judge(
            _ operation: PermissionOperation, _ entity: Entity, _ record: @escaping PermissionRules.Values, _ role: Role, _ user: RecordID?
        ) -> PermissionVerdict {
            (try? rules.judge(operation, on: entity, values: record, actor: Actor(role: role, user: user), lookup: lookup)) ?? .refused
        }
        #expect(judge(.update, teams, values, "coach", 7) == .allowed)
        #expect(judge(.update, teams, values, "coach", 8) == .refused)
        #expect(judge(.update, teams, values, "coach", nil) == .refused)
        #expect(judge(.update, teams, values, "medic", 7) == .refused)
        #expect(judge(.update, teams, values, .admin, nil) == .allowed)
        #expect(judge(.update, teams, values, .viewer, 7) == .refused)
        #expect(judge(.create, teams, values, "coach", 7) == .refused)
        let link: PermissionRules.Values = { $0 == "team_id" ? 3 : .null }
        let dangling: PermissionRules.Values = { $0 == "team_id" ? 99 : .null }
        #expect(judge(.create, links, link, "coach", 7) == .allowed)
        #expect(judge(.create, links, dangling, "coach", 7) == .unknown)  // a record the caller does not hold
        #expect(judge(.delete, links, link, "medic", 7) == .allowed)  // "*": any role but viewer
        #expect(judge(.delete, links, link, .viewer, 7) == .refused)
        #expect(judge(.update, links, link, .member, nil) == .allowed)  // no rule for update
        #expect(rules.requirement(.update, on: teams) == "admin, or coach where coach_id is you")
        #expect(rules.requirement(.delete, on: links) == "admin, or anyone but a viewer where team_id.coach_id is you")
        let birth = try #require(schema.entity("players")?.attribute("date_of_birth"))
        #expect(rules.mayWrite(birth, actor: Actor(role: "medic", user: nil)))
        #expect(!rules.mayWrite(birth, actor: Actor(role: "coach", user: nil)))
        #expect(rules.writeRequirement(birth) == "admin or medic")
    }
}
