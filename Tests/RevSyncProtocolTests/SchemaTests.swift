import RevSyncProtocol
import Testing

@Suite struct DemoSchemaTests {
    let schema = Schema.demo

    @Test func hasTheCaseStudyEntitiesWithTheirNames() throws {
        let users = try #require(schema.entity("users"))
        #expect(users.attribute("first_name")?.type == .text)
        #expect(users.attribute("last_name")?.type == .text)
        #expect(users.attribute("date_of_birth")?.type == .date)
        let screens = try #require(schema.entity("screens"))
        #expect(screens.attribute("name")?.type == .text)
        #expect(screens.attribute("name")?.isRequired == true)
        let instances = try #require(schema.entity("screen_instances"))
        #expect(instances.attribute("screen_id")?.referenceTarget == "screens")
        #expect(instances.attribute("date") != nil && instances.attribute("comment") != nil)
        let items = try #require(schema.entity("screen_instance_items"))
        #expect(items.attribute("screen_instance_id")?.type == .reference(target: "screen_instances", onDelete: .cascade))
        #expect(items.attribute("numeric_value")?.type == .real)
        let teamPlayers = try #require(schema.entity("team_players"))
        #expect(teamPlayers.attribute("team_id")?.type == .reference(target: "teams", onDelete: .cascade))
        #expect(teamPlayers.attribute("player_id")?.type == .reference(target: "players", onDelete: .cascade))
        #expect(schema.entity("teams") != nil && schema.entity("players") != nil)
    }

    @Test func hasAboutADozenEntitiesAndEveryDeleteRule() {
        #expect((12...14).contains(schema.entities.count))
        let rules = Set(
            schema.entities.flatMap { entity in
                entity.attributes.compactMap { attribute -> DeleteRule? in
                    if case .reference(_, let rule) = attribute.type { return rule }
                    return nil
                }
            })
        #expect(rules == [.cascade, .nullify, .deny])
    }

    @Test func referencesToAnEntityAreIndexed() {
        let toTeams = schema.references(to: "teams").map { "\($0.entity).\($0.attribute):\($0.rule)" }.sorted()
        #expect(toTeams == ["notes.team_id:cascade", "team_players.team_id:cascade", "training_sessions.team_id:cascade"])
    }

    @Test func encodesAndLoadsBackTheSame() throws {
        let reloaded = try Schema(json: schema.jsonBytes())
        #expect(reloaded == schema)
        #expect(reloaded.jsonBytes() == schema.jsonBytes())
    }
}

@Suite struct SchemaLoaderTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let json: String
        let path: String
        let message: String
        var testDescription: String { name }
    }

    static func entities(_ body: String) -> String { #"{"version":1,"entities":{"# + body + "}}" }

    static let cases: [Case] = [
        Case(name: "not JSON", json: "{", path: "", message: "not valid JSON"),
        Case(name: "no version", json: #"{"entities":{"a":{"attributes":{}}}}"#, path: "", message: "missing \"version\""),
        Case(
            name: "version zero", json: #"{"version":0,"entities":{"a":{"attributes":{}}}}"#, path: "version",
            message: "version must be 1 or more"),
        Case(name: "no entities", json: #"{"version":1,"entities":{}}"#, path: "entities", message: "at least one entity"),
        Case(name: "unknown root key", json: #"{"version":1,"entities":{},"colour":1}"#, path: "colour", message: "unknown key"),
        Case(
            name: "bad entity name", json: entities(#""Teams":{"attributes":{}}"#), path: "entities.Teams",
            message: "not a valid entity name"),
        Case(
            name: "reserved entity name", json: entities(#""conflicts":{"attributes":{}}"#), path: "entities.conflicts", message: "reserved"
        ),
        Case(
            name: "database entity name", json: entities(#""sqlite_master":{"attributes":{}}"#), path: "entities.sqlite_master",
            message: "reserved"),
        Case(
            name: "reserved attribute", json: entities(#""a":{"attributes":{"revision":{"type":"integer"}}}"#),
            path: "entities.a.attributes.revision", message: "reserved"),
        Case(
            name: "unknown type", json: entities(#""a":{"attributes":{"x":{"type":"money"}}}"#),
            path: "entities.a.attributes.x.type", message: "unknown type \"money\""),
        Case(
            name: "missing type", json: entities(#""a":{"attributes":{"x":{}}}"#), path: "entities.a.attributes.x",
            message: "missing \"type\""),
        Case(
            name: "reference without target", json: entities(#""a":{"attributes":{"x":{"type":"reference","onDelete":"deny"}}}"#),
            path: "entities.a.attributes.x", message: "needs a \"target\""),
        Case(
            name: "reference without rule", json: entities(#""a":{"attributes":{"x":{"type":"reference","target":"a"}}}"#),
            path: "entities.a.attributes.x", message: "onDelete"),
        Case(
            name: "unknown rule", json: entities(#""a":{"attributes":{"x":{"type":"reference","target":"a","onDelete":"restrict"}}}"#),
            path: "entities.a.attributes.x.onDelete", message: "unknown delete rule"),
        Case(
            name: "unknown target", json: entities(#""a":{"attributes":{"x":{"type":"reference","target":"b","onDelete":"deny"}}}"#),
            path: "entities.a.attributes.x", message: "not an entity"),
        Case(
            name: "nullify on a required reference",
            json: entities(#""a":{"attributes":{"x":{"type":"reference","target":"a","onDelete":"nullify","required":true}}}"#),
            path: "entities.a.attributes.x", message: "cannot use the nullify"),
        Case(
            name: "required is not a boolean", json: entities(#""a":{"attributes":{"x":{"type":"text","required":"yes"}}}"#),
            path: "entities.a.attributes.x.required", message: "true or false"),
        Case(
            name: "target on a non-reference", json: entities(#""a":{"attributes":{"x":{"type":"text","target":"a"}}}"#),
            path: "entities.a.attributes.x", message: "references only"),
        Case(
            name: "unknown staleness", json: entities(#""a":{"staleness":"field","attributes":{}}"#), path: "entities.a.staleness",
            message: "unknown staleness \"field\" (expected record or attribute)"),
        Case(
            name: "staleness is not a string", json: entities(#""a":{"staleness":true,"attributes":{}}"#), path: "entities.a.staleness",
            message: "expected a string"),
        Case(
            name: "duplicate entity", json: #"{"version":1,"entities":{"a":{"attributes":{}},"a":{"attributes":{}}}}"#,
            path: "", message: "appears twice"),
        Case(
            name: "a lease of no days", json: #"{"version":1,"maxOfflineDays":0,"entities":{"a":{"attributes":{}}}}"#,
            path: "maxOfflineDays", message: "from 1 to 3650 days"),
        Case(
            name: "a lease of more than ten years", json: #"{"version":1,"maxOfflineDays":3651,"entities":{"a":{"attributes":{}}}}"#,
            path: "maxOfflineDays", message: "from 1 to 3650 days"),
        Case(
            name: "a lease as text", json: #"{"version":1,"maxOfflineDays":"30","entities":{"a":{"attributes":{}}}}"#,
            path: "maxOfflineDays", message: "must be an integer"),
    ]

    /// The offline lease is read, written back and kept through a change of version in code;
    /// a schema without it has none.
    @Test func theOfflineLeaseIsReadAndKept() throws {
        let schema = try Schema(json: Array(#"{"version":1,"maxOfflineDays":30,"entities":{"a":{"attributes":{}}}}"#.utf8))
        #expect(schema.maxOfflineDays == 30)
        #expect(String(decoding: schema.jsonBytes(), as: UTF8.self).contains(#""maxOfflineDays":30"#))
        #expect(try Schema(json: schema.jsonBytes()) == schema)
        #expect(try schema.changing(version: 2) { $0 }.maxOfflineDays == 30)
        #expect(Schema.demo.maxOfflineDays == nil && !String(decoding: Schema.demo.jsonBytes(), as: UTF8.self).contains("maxOfflineDays"))
    }

    @Test(arguments: cases)
    func invalidSchemaIsRefusedWithItsPath(_ testCase: Case) {
        do {
            _ = try Schema(json: Array(testCase.json.utf8))
            Issue.record("loaded an invalid schema: \(testCase.name)")
        } catch {
            #expect(error.path == testCase.path, "\(error)")
            #expect(error.message.contains(testCase.message), "\(error)")
        }
    }

    @Test func stalenessIsReadKeptAndLeftOutWhenItIsTheDefault() throws {
        let json = Self.entities(#""a":{"staleness":"attribute","attributes":{"x":{"type":"text"}}},"b":{"attributes":{}}"#)
        let schema = try Schema(json: Array(json.utf8))
        #expect(schema.entity("a")?.staleness == .attribute && schema.entity("b")?.staleness == .record)
        let written = String(decoding: schema.jsonBytes(), as: UTF8.self)
        #expect(written.contains(#""staleness":"attribute""#) && !written.contains(#""staleness":"record""#))
        #expect(try Schema(json: schema.jsonBytes()) == schema)
        // The demo schema, written before the key existed, reads back byte for byte the same.
        #expect(try Schema(json: Schema.demo.jsonBytes()).jsonBytes() == Schema.demo.jsonBytes())
    }

    @Test func aSwitchOfStalenessIsAnUpgradeStepOnlyTowardsAttribute() throws {
        let attribute = try Schema.demo.setting(.attribute, for: ["players"], version: Schema.demo.version + 1)
        let toAttribute = try SchemaUpgrade(from: .demo, to: attribute) { _ in 1 }
        #expect(toAttribute.steps == [.trackAttributeWrites(attribute.entity("players")!)])
        let back = try SchemaUpgrade(
            from: attribute, to: try Schema.demo.setting(.record, for: ["players"], version: Schema.demo.version + 2)
        ) { _ in 1 }
        #expect(back.steps.isEmpty)
    }

    @Test func missingFileIsAClearError() {
        #expect {
            try Schema(contentsOfFile: "/nonexistent/schema.json")
        } throws: { error in
            "\(error)".contains("cannot read schema file /nonexistent/schema.json")
        }
    }
}

@Suite struct AttributeValueTests {
    @Test func valuesAreCheckedAgainstTheirType() throws {
        let players = try #require(Schema.demo.entity("players"))
        #expect(try players.attribute("height_cm")!.accept(.integer(150)).get() == .real(150))
        #expect(throws: ValueRefusal.self) { try players.attribute("height_cm")!.accept(.text("tall")).get() }
        #expect(throws: ValueRefusal.self) { try players.attribute("first_name")!.accept(.null).get() }
        #expect(throws: ValueRefusal.self) { try players.attribute("first_name")!.accept(.text("a\u{0}b")).get() }
        #expect(try players.attribute("active")!.accept(.bool(true)).get() == .bool(true))
        #expect(throws: ValueRefusal.self) { try players.attribute("active")!.accept(.integer(1)).get() }
        let teamPlayers = try #require(Schema.demo.entity("team_players"))
        #expect(throws: ValueRefusal.self) { try teamPlayers.attribute("jersey_number")!.accept(.real(7.5)).get() }
        #expect(try teamPlayers.attribute("team_id")!.accept(.integer(-3)).get() == .integer(-3))
    }
}
