import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncGeneratedFixtures
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Generated types are compiled, not compared: the demo's (every attribute type, every delete
/// rule, `swiftName`) and a schema of hostile names (`Tests/RevSyncGeneratedFixtures`) are
/// targets of the package, used here through a real store and server; names that cannot make
/// valid Swift are refused with a message; a description cannot become code.
@Suite struct GeneratedTypesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let hostileSchemaFile = root.appendingPathComponent("Tests/RevSyncGeneratedFixtures/hostile-names.json")
    static let hostile = try! Schema(json: [UInt8](Data(contentsOf: hostileSchemaFile)))

    @Test func theHostileFixtureIsWhatItsSchemaGenerates() throws {
        let committed = try String(
            contentsOf: Self.root.appendingPathComponent("Tests/RevSyncGeneratedFixtures/HostileNames.swift"), encoding: .utf8)
        #expect(try SwiftTypesGenerator(schema: Self.hostile, access: .public).firstDifference(from: committed) == nil)
    }

    /// A record with an attachment, through plain GRDB, the server and another device, and
    /// through `Codable`: the typed client and attachments together.
    @Test func aTypedRecordWithAPhotoTravelsAndDecodes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let ipad = try await server.clientDevice("ipad", in: directory)
                let laptop = try await server.clientDevice("laptop", in: directory)
                let portrait = Data((0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
                let photo = try Attachment.data(portrait, type: "image/jpeg", name: "ana.jpg")
                let temporary = try await ipad.store.database.write { db in
                    try Player(firstName: "Ana", lastName: "Lopez", photo: photo).inserted(db).id
                }
                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.attachmentsUploaded == 1)
                let id = try #require(try await ipad.store.permanentID(of: temporary))
                try await laptop.sync()
                let received = try #require(try await laptop.store.database.read { db in try Player.fetchOne(db, id: id) })
                #expect(received.photo == photo && received.firstName == "Ana")
                #expect(laptop.store.hasAttachment(photo))
                let bytes = try await laptop.store.attachment(photo)
                #expect(try Data(contentsOf: bytes) == portrait)
                // Codable: the photo is its wire object, and decodes to the same value.
                let json = try JSONEncoder().encode(received)
                let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
                #expect((object["photo"] as? [String: Any])?["sha256"] as? String == photo.sha256)
                #expect(try JSONDecoder().decode(Player.self, from: json) == received)
                // A broken digest does not decode.
                let broken = String(decoding: json, as: UTF8.self).replacingOccurrences(of: photo.sha256, with: "not-a-digest")
                #expect(throws: DecodingError.self) { try JSONDecoder().decode(Player.self, from: Data(broken.utf8)) }
            }
        }
    }

    /// Keywords as attribute names (`self`, `default`, `init`, `protocol`, `in`), a reference
    /// whose association is `self`, names the file uses for itself: they compiled (this file
    /// imports them), and they write, sync and read back.
    @Test func hostileNamesWriteSyncAndReadBack() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: Self.hostile) { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let other = try await server.clientDevice("laptop", in: directory)
                let photo = try Attachment.data(Data("a scanned form".utf8), type: "application/pdf")
                try await device.store.database.write { db in
                    let parent = try KeywordRecord(self: "parent", default: "d", init: 3, protocol: true, type: 1.5, photo: photo)
                        .inserted(db)
                    var child = KeywordRecord(self: "child", selfID: parent.id, databaseTableName: "t", columns: "c", codingKeys: "k")
                    child.in = "2026-11-26"
                    try child.insert(db)
                    _ = try Crate(label: "box", keywordID: child.id, ownerID: parent.id).inserted(db)
                }
                #expect(try await device.sync().conflicts.isEmpty)
                try await other.sync()
                try await other.store.database.read { db in
                    let child = try #require(try KeywordRecord.filter(KeywordRecord.Columns.`self` == "child").fetchOne(db))
                    #expect(child.`in` == "2026-11-26" && child.databaseTableName == "t" && child.codingKeys == "k")
                    let parent = try #require(try child.request(for: KeywordRecord.`self`).fetchOne(db))
                    #expect(parent.`self` == "parent" && parent.`default` == "d" && parent.`init` == 3 && parent.`protocol` == true)
                    #expect(parent.type == 1.5 && parent.photo == photo)
                    let crate = try #require(try Crate.fetchOne(db))
                    #expect(try crate.request(for: Crate.keyword).fetchOne(db)?.id == child.id)
                    #expect(try crate.request(for: Crate.owner).fetchOne(db)?.id == parent.id)
                    // Defaults of hostile text are literals that compile to the value itself.
                    #expect(
                        crate.mood == "a quote \" a backslash \\ a line\nbreak \u{202E} an override */ func evil() {}" && crate.count == -3)
                }
            }
        }
    }

    // MARK: Names that cannot be Swift

    static func schema(_ entities: String) throws -> Schema {
        try Schema(json: Array(#"{"version": 1, "entities": {\#(entities)}}"#.utf8))
    }

    static func collision(_ entities: String) throws -> String? {
        let generator = SwiftTypesGenerator(schema: try schema(entities))
        do {
            _ = try generator.source()
            return nil
        } catch {
            return error.message
        }
    }

    @Test func namesThatCollideInSwiftAreRefusedNamingBoth() async throws {
        let text = #"{"attributes": {"name": {"type": "text"}}}"#
        #expect(
            try Self.collision(#""team": \#(text), "teams": \#(text)"#)
                == "entities team and teams would both be the Swift type Team: give one of them a swiftName")
        #expect(
            try Self.collision(#""things": {"attributes": {"a_b": {"type": "text"}, "a__b": {"type": "text"}}}"#)
                == "entity things: attribute a__b and attribute a_b would both be the Swift property aB of Thing: rename one of the attributes"
        )
        #expect(
            try Self.collision(#""strings": \#(text)"#)
                == "entity strings would be the Swift type String, which hides the String the generated file uses: give the entity a swiftName"
        )
        #expect(
            try Self.collision(#""selves": {"swiftName": "Self", "attributes": {}}"#)
                == "entity selves (swiftName Self) would be the Swift type Self, a Swift keyword: give it another swiftName")
        #expect(
            try Self.collision(#""things": {"attributes": {"revision_": {"type": "text"}}}"#)
                == "entity things: attribute revision_ and the record's own revision would both be the Swift property revision of Thing: rename one of the attributes"
        )
        #expect(
            try Self.collision(
                #""things": {"attributes": {"team": {"type": "reference", "target": "things", "onDelete": "nullify"}, "team_id": {"type": "reference", "target": "things", "onDelete": "nullify"}}}"#
            )
                == "entity things: the association of team_id and the association of team would both be Thing.team: rename one of the attributes"
        )
        #expect(
            try Self.collision(#""records": {"swiftName": "Team", "attributes": {}}, "teams": \#(text)"#)
                == "entities records and teams would both be the Swift type Team: give one of them a swiftName")
        // The command says so and writes nothing.
        try await withTemporaryDirectory { directory in
            let schemaFile = directory.file("schema.json")
            try Data(#"{"version": 4, "entities": {"team": \#(text), "teams": \#(text)}}"#.utf8).write(to: URL(fileURLWithPath: schemaFile))
            let refused = try await ExecutableProcess.run(
                "revsync", ["generate", "swift", "--schema", schemaFile, "--out", directory.file("new/folder/Records.swift")])
            #expect(refused.status != 0)
            #expect(
                refused.stderr.contains(
                    "cannot generate Swift types from schema version 4: entities team and teams would both be the Swift type Team"))
            #expect(!FileManager.default.fileExists(atPath: directory.file("new/folder/Records.swift")))
            // A folder that does not exist yet is made.
            let written = try await ExecutableProcess.run(
                "revsync",
                ["generate", "swift", "--schema", Self.hostileSchemaFile.path, "--out", directory.file("new/folder/Records.swift")])
            #expect(written.status == 0, "\(written.stderr)")
            #expect(FileManager.default.fileExists(atPath: directory.file("new/folder/Records.swift")))
        }
    }

    // MARK: Descriptions

    @Test(arguments: ["\r", "\u{0}", "\u{7}", "\u{1B}", "\u{85}", "\u{2028}", "\u{2029}", "\r\n"])
    func aDescriptionWithAControlCharacterIsRefusedAtLoadNamingItsPath(character: String) throws {
        let escaped = character.unicodeScalars.map { String(format: "\\u%04X", $0.value) }.joined()
        for (json, path) in [
            (#"{"version": 1, "description": "a\#(escaped)b", "entities": {}}"#, "description"),
            (#"{"version": 1, "entities": {"teams": {"description": "a\#(escaped)b", "attributes": {}}}}"#, "entities.teams.description"),
            (
                #"{"version": 1, "entities": {"teams": {"attributes": {"name": {"type": "text", "description": "a\#(escaped)b"}}}}}"#,
                "entities.teams.attributes.name.description"
            ),
        ] {
            let error = #expect(throws: SchemaError.self) { try Schema(json: Array(json.utf8)) }
            #expect(error?.path == path, "\(String(describing: error))")
            #expect(error?.message.contains("a description may hold no control character but a line break") == true)
        }
        // A line break is a line break.
        let schema = try Schema(json: Array(#"{"version": 1, "entities": {"teams": {"description": "a\nb", "attributes": {}}}}"#.utf8))
        #expect(schema.entity("teams")?.summary == "a\nb")
    }

    /// A schema built in code skips the loader: the generator itself must keep every
    /// description inside its comment. `swiftc -dump-parse` of the file finds exactly the
    /// declarations of the same schema without descriptions.
    @Test func aDescriptionNeverBecomesCode() async throws {
        let payload = "func injected() {}; struct Injected {}"
        let hostile = [
            "\r\(payload)", "line\r\n\(payload)", "\u{2028}\(payload)", "\u{2029}\(payload)", "\u{85}\(payload)", "\u{0B}\(payload)",
            "\u{0C}\(payload)", "\u{0}\(payload)", "\u{202E}\(payload)", "*/ \(payload) /*",
        ]
        func schema(describedBy descriptions: [String]?) throws -> Schema {
            let entities = try descriptions.map { list in
                try list.enumerated().map { index, text in
                    try Entity(
                        name: "things\(index)", attributes: [Attribute(name: "name", type: .text, summary: text)], summary: text)
                }
            }
            let plain = try (0..<hostile.count).map { index in
                try Entity(name: "things\(index)", attributes: [Attribute(name: "name", type: .text)])
            }
            return try Schema(version: 1, entities: entities ?? plain)
        }
        let attacked = try SwiftTypesGenerator(schema: schema(describedBy: hostile)).source()
        let plain = try SwiftTypesGenerator(schema: schema(describedBy: nil)).source()
        #expect(!attacked.contains("\r") && !attacked.contains("\u{2028}") && !attacked.contains("\u{202E}"))
        let found = try await Self.declarations(in: attacked)
        #expect(found == (try await Self.declarations(in: plain)))
        #expect(found.contains("struct_decl \"Things0\"") && !found.contains { $0.contains("injected") || $0.contains("Injected") })
    }

    /// Every declaration `swiftc -dump-parse` finds in `source`, as `kind "name"`.
    static func declarations(in source: String) async throws -> [String] {
        try await withTemporaryDirectory { directory in
            let file = directory.file("Generated.swift")
            try Data(source.utf8).write(to: URL(fileURLWithPath: file))
            let swiftc = try #require(
                (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swiftc" }.first {
                    FileManager.default.isExecutableFile(atPath: $0)
                })
            let parse = try await ExecutableProcess.run(swiftc, ["-dump-parse", file])
            #expect(parse.status == 0, "\(parse.stderr)")
            let pattern = try Regex(#"\((\w+_decl) [^"\n]*("[^"]*")"#)
            return parse.stdout.split(separator: "\n").compactMap { line in
                line.firstMatch(of: pattern).map { "\($0.output[1].substring ?? "") \($0.output[2].substring ?? "")" }
            }
        }
    }
}
