import RevSyncProtocol
import Testing

/// What a lineage of schema versions accepts, refuses (naming the change), and how its lenses
/// translate change sets both ways.
@Suite struct SchemaLineageTests {
    static func schema(_ json: String) throws -> Schema {
        try Schema(json: Array(json.utf8))
    }

    static let v1 = try! schema(
        #"{"version": 1, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "colour": {"type": "text"}}},"#
            + #""players": {"attributes": {"nickname": {"type": "text"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
    )

    /// Renames teams to squads and nickname to alias, adds a required attribute with a default,
    /// drops colour.
    static let v2 = try! schema(
        #"{"version": 2, "entities": {"squads": {"renamedFrom": "teams", "attributes": {"name": {"type": "text", "required": true}}},"#
            + #""players": {"attributes": {"alias": {"type": "text", "renamedFrom": "nickname"}, "team_id": {"type": "reference", "target": "squads", "onDelete": "cascade"},"#
            + #""active": {"type": "boolean", "required": true, "default": true}}}}}"#)

    @Test func theStoredLayoutIsTheLatestWithTheDroppedAttributesOlderVersionsStillHave() throws {
        let lineage = try SchemaLineage([Self.v1, Self.v2])
        let squads = try #require(lineage.storage.entity("squads"))
        #expect(squads.attributes.map(\.name) == ["name", "colour"])
        #expect(squads.attribute("colour")?.isRetained == true)
        #expect(lineage.lens(version: 2) != nil, "the latest leaves out what only version 1 has")
        // Retiring version 1 retires what only it had.
        let retired = try SchemaLineage([
            Self.v1,
            try Self.schema(
                String(decoding: Self.v2.jsonBytes(), as: UTF8.self).replacing(#""version":2"#, with: #""version":2,"minimumVersion":2"#)),
        ])
        #expect(retired.storage.entity("squads")?.attributes.map(\.name) == ["name"])
        #expect(retired.lens(version: 2) == nil)
    }

    @Test func lensesTranslateBothWays() throws {
        let lineage = try SchemaLineage([Self.v1, Self.v2])
        let lens = try #require(lineage.lens(version: 1))
        var sent = ChangeSet(id: "a")
        sent[entity: "players"].create = [-1]
        sent[entity: "players"].attributes[-1] = RecordAttributes(values: ["nickname": "Speedy", "team_id": 5])
        sent[entity: "teams"].update = [5]
        sent[entity: "teams"].attributes[5] = RecordAttributes(revision: 3, values: ["colour": "red"])
        let stored = lens.toStored(sent)
        #expect(stored.types == ["squads", "players"] || stored.types == ["players", "squads"])
        #expect(stored.changes(for: "players")?.attributes[-1]?.values == ["alias": "Speedy", "team_id": 5, "active": true])
        #expect(stored.changes(for: "squads")?.attributes[5]?.values == ["colour": "red"])
        #expect(stored.changes(for: "squads")?.attributes[5]?.revision == 3)

        var answer = ChangeSet(revision: 9)
        answer[entity: "players"].update = [7]
        answer[entity: "players"].attributes[7] = RecordAttributes(revision: 9, values: ["alias": "Flash", "team_id": 5, "active": false])
        answer.conflicts = [ConflictEntry(type: "players", id: 7, reason: .staleRevision, attribute: "alias")]
        let device = lens.toDevice(answer)
        #expect(device.changes(for: "players")?.attributes[7]?.values == ["nickname": "Flash", "team_id": 5])
        #expect(device.conflicts.first?.attribute == "nickname")
        // Version 2 does not see what only version 1 has.
        let latest = try #require(lineage.lens(version: 2))
        var withColour = ChangeSet(revision: 10)
        withColour[entity: "squads"].update = [5]
        withColour[entity: "squads"].attributes[5] = RecordAttributes(revision: 10, values: ["name": "U12", "colour": "blue"])
        #expect(latest.toDevice(withColour).changes(for: "squads")?.attributes[5]?.values == ["name": "U12"])
    }

    /// Each change that cannot be translated both ways is refused, naming it.
    @Test(arguments: [
        (
            #"{"version": 2, "entities": {"squads": {"renamedFrom": "clubs", "attributes": {"name": {"type": "text", "required": true}}}, "players": {"attributes": {"nickname": {"type": "text"}}}}}"#,
            "no entity \"clubs\""
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}, "players": {"attributes": {"alias": {"type": "text", "renamedFrom": "nick"}}}}}"#,
            "no attribute \"nick\""
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}}}"#,
            "removes the entity players"
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "city": {"type": "text", "required": true}}}, "players": {"attributes": {"nickname": {"type": "text"}}}}}"#,
            "teams.city is required, and version 1 does not have it"
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "colour": {"type": "text", "required": true, "default": "white"}}}, "players": {"attributes": {"nickname": {"type": "text"}}}}}"#,
            "teams.colour becomes required"
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text"}}}, "players": {"attributes": {"nickname": {"type": "text"}}}}}"#,
            "teams.name becomes optional"
        ),
        (
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}, "players": {"attributes": {"alias": {"type": "integer", "renamedFrom": "nickname"}}}}}"#,
            "changes type from text to integer"
        ),
    ])
    func untranslatableChangesAreRefused(json: String, message: String) throws {
        let next = try Self.schema(json)
        #expect {
            try SchemaLineage([Self.v1, next])
        } throws: { error in
            "\(error)".contains(message)
        }
        // With version 1 retired, the same change is allowed, except what misreads stored values
        // or names nothing.
        let retired = try Self.schema(json.replacing(#""version": 2,"#, with: #""version": 2, "minimumVersion": 2,"#))
        if message.contains("required") || message.contains("optional") || message.contains("removes") {
            _ = try SchemaLineage([Self.v1, retired])
        }
    }

    @Test func aDefaultMustFitItsAttribute() throws {
        #expect(throws: SchemaError.self) {
            try Self.schema(#"{"version": 1, "entities": {"t": {"attributes": {"n": {"type": "integer", "default": "x"}}}}}"#)
        }
        #expect(throws: SchemaError.self) {
            try Self.schema(
                #"{"version": 1, "entities": {"t": {"attributes": {"n": {"type": "reference", "target": "t", "onDelete": "cascade", "default": 1}}}}}"#
            )
        }
        let fine = try Self.schema(#"{"version": 1, "entities": {"t": {"attributes": {"n": {"type": "real", "default": 2}}}}}"#)
        #expect(try Schema(json: fine.jsonBytes()) == fine, "the file format keeps a default")
    }

    @Test func renamesChainThroughVersionsAndKeepTheirHistory() throws {
        // Version 3 keeps version 2's renamedFrom (history) and renames alias again.
        let v3 = try Self.schema(
            String(decoding: Self.v2.jsonBytes(), as: UTF8.self).replacing(#""version":2"#, with: #""version":3"#)
                .replacing(
                    #""alias":{"type":"text","renamedFrom":"nickname"}"#, with: #""nickname2":{"type":"text","renamedFrom":"alias"}"#))
        let lineage = try SchemaLineage([Self.v1, Self.v2, v3])
        let lens = try #require(lineage.lens(version: 1))
        var sent = ChangeSet(id: "a")
        sent[entity: "players"].update = [1]
        sent[entity: "players"].attributes[1] = RecordAttributes(revision: 1, values: ["nickname": "x"])
        #expect(lens.toStored(sent).changes(for: "players")?.attributes[1]?.values == ["nickname2": "x"])
        // A store at version 1 follows both renames through version 2.
        let upgrade = try SchemaUpgrade(from: Self.v1, through: [Self.v2], to: v3) { _ in 0 }
        #expect(upgrade.steps.contains(.renameAttribute(entity: "players", from: "nickname", to: "nickname2")))
        #expect(upgrade.steps.contains(.renameEntity(from: "teams", to: "squads")))
    }

    /// A rename onto a name an earlier version gave to something dropped since is refused at
    /// start, whether the dropped one is still served (version 1 would read the renamed values
    /// as its own) or retired (its values are still stored under that name, and version 3 would
    /// read them): for attributes and for entities. Dropping and adding again under the same
    /// name, without a rename, is the same attribute (its stored values come back).
    @Test func aRenameOntoARetiredNameIsRefused() throws {
        let v2 = try Self.schema(
            #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}, "#
                + #""players": {"attributes": {"nickname": {"type": "text"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
        )
        for minimum in ["", #""minimumVersion": 3, "#] {
            let attribute = try Self.schema(
                #"{"version": 3, \#(minimum)"entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}, "#
                    + #""players": {"attributes": {"colour": {"type": "text", "renamedFrom": "nickname"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
            )
            // players never had colour: a rename onto a name of another entity's is fine.
            _ = try SchemaLineage([Self.v1, v2, attribute])
            let ontoDropped = try Self.schema(
                #"{"version": 3, \#(minimum)"entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "colour": {"type": "text", "renamedFrom": "name2"}}}, "#
                    + #""players": {"attributes": {"nickname": {"type": "text"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
            )
            let v2WithName2 = try Self.schema(
                #"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "name2": {"type": "text"}}}, "#
                    + #""players": {"attributes": {"nickname": {"type": "text"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
            )
            #expect {
                try SchemaLineage([Self.v1, v2WithName2, ontoDropped])
            } throws: { error in
                "\(error)".contains("entities.teams.attributes.colour.renamedFrom")
                    && "\(error)".contains("choose a name the data set never had")
            }
        }
        // Entities: version 2 drops players (version 1 retired), version 3 renames teams to players.
        let withoutPlayers = try Self.schema(
            #"{"version": 2, "minimumVersion": 2, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}}}}}"#)
        let teamsToPlayers = try Self.schema(
            #"{"version": 3, "minimumVersion": 3, "entities": {"players": {"renamedFrom": "teams", "attributes": {"name": {"type": "text", "required": true}}}}}"#
        )
        #expect {
            try SchemaLineage([Self.v1, withoutPlayers, teamsToPlayers])
        } throws: { error in
            "\(error)".contains("entities.players.renamedFrom") && "\(error)".contains("a name an earlier version gave")
        }
        // Dropping colour and adding it back, without a rename, is the same attribute.
        let colourBack = try Self.schema(
            #"{"version": 3, "entities": {"teams": {"attributes": {"name": {"type": "text", "required": true}, "colour": {"type": "text"}}}, "#
                + #""players": {"attributes": {"nickname": {"type": "text"}, "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}}}}}"#
        )
        let lineage = try SchemaLineage([Self.v1, v2, colourBack])
        #expect(lineage.storage.entity("teams")?.attributes.map(\.name) == ["name", "colour"])
    }

    /// An attribute a later version dropped, kept for an older one, keeps the write rule of the
    /// last version that had it (a role the latest no longer declares drops out).
    @Test func aKeptAttributeKeepsItsLastWriteRule() throws {
        let v1 = try Self.schema(
            #"{"version": 1, "roles": ["coach"], "entities": {"teams": {"attributes": {"name": {"type": "text"}, "#
                + #""legacy": {"type": "text", "write": ["admin"]}, "kit": {"type": "text", "write": ["coach"]}}}}}"#)
        let v2 = try Self.schema(#"{"version": 2, "entities": {"teams": {"attributes": {"name": {"type": "text"}}}}}"#)
        let lineage = try SchemaLineage([v1, v2])
        let teams = try #require(lineage.storage.entity("teams"))
        #expect(teams.attribute("legacy")?.isRetained == true)
        #expect(teams.attribute("legacy")?.writeRoles == [.admin])
        #expect(teams.attribute("kit")?.writeRoles == [], "coach is no role of version 2: admin only")
        let rules = PermissionRules(schema: lineage.storage)
        #expect(!rules.mayWrite(try #require(teams.attribute("legacy")), actor: Actor(role: .member, user: nil)))
        #expect(rules.mayWrite(try #require(teams.attribute("legacy")), actor: Actor(role: .admin, user: nil)))
    }
}
