import Foundation
import GRDB
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Tables, rows, indexes, views and triggers an app made in its store through
/// `store.database` are the app's (`docs/client.md`): a first sync that starts from the
/// server's snapshot touches nothing but RevSync's own tables and rows. (It used to write the
/// snapshot over the whole store: the app's table, row and index were gone after it.)
@Suite struct SnapshotAppObjectsTests {
    @Test func aStartFromTheSnapshotKeepsWhatTheAppMadeInItsStore() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let maker = try await server.clientDevice("maker", in: directory)
                try await SnapshotBootstrapTests.work(maker, "A")
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.store.database.writeWithoutTransaction { db in
                    try db.execute(
                        sql: """
                            CREATE TABLE app_drafts (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, length INTEGER
                                GENERATED ALWAYS AS (length(body)) VIRTUAL);
                            INSERT INTO app_drafts (body) VALUES ('kept draft');
                            INSERT INTO app_drafts (body) VALUES ('another');
                            DELETE FROM app_drafts WHERE body = 'another';
                            CREATE INDEX app_players_by_last_name ON players (last_name, first_name);
                            CREATE VIEW app_long_drafts AS SELECT body FROM app_drafts WHERE length > 3;
                            CREATE TABLE app_log (what TEXT);
                            CREATE TRIGGER app_log_players AFTER INSERT ON players BEGIN INSERT INTO app_log VALUES ('player ' || NEW.first_name); END;
                            CREATE VIRTUAL TABLE app_search USING fts5(body);
                            INSERT INTO app_search (body) VALUES ('searchable note');
                            """)
                }
                let report = try await tablet.sync()
                #expect(report.startedFromSnapshot != nil, "the first sync starts from the snapshot")
                #expect(try await tablet.store.contents() == server.contents())
                struct Kept: Sendable {
                    var drafts: [String], length: Int?, long: [String], index: String?, search: [String], log: Int?
                }
                let kept = try await tablet.store.database.read { db in
                    Kept(
                        drafts: try String.fetchAll(db, sql: "SELECT body FROM app_drafts"),
                        length: try Int.fetchOne(db, sql: "SELECT length FROM app_drafts"),
                        long: try String.fetchAll(db, sql: "SELECT body FROM app_long_drafts"),
                        index: try String.fetchOne(
                            db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'app_players_by_last_name'"),
                        search: try String.fetchAll(db, sql: "SELECT body FROM app_search WHERE app_search MATCH 'searchable'"),
                        log: try Int.fetchOne(db, sql: "SELECT count(*) FROM app_log"))
                }
                #expect(kept.drafts == ["kept draft"])
                #expect(kept.length == 10, "a generated column is computed again")
                #expect(kept.long == ["kept draft"])
                #expect(kept.index != nil)
                #expect(kept.search == ["searchable note"])
                #expect(kept.log == 0, "the trigger fired on nothing RevSync copied")
                // The AUTOINCREMENT counter came along (no ID is handed out twice), and the trigger works.
                let after = try await tablet.store.database.writeWithoutTransaction { db -> Int? in
                    try db.execute(sql: "INSERT INTO app_drafts (body) VALUES ('after')")
                    return try Int.fetchOne(db, sql: "SELECT id FROM app_drafts WHERE body = 'after'")
                }
                #expect(after == 3)
                try await tablet.table("players").insert(["first_name": "Newcomer", "last_name": "X"])
                #expect(
                    try await tablet.store.database.read { db in try String.fetchAll(db, sql: "SELECT what FROM app_log") } == [
                        "player Newcomer"
                    ])
                #expect(try await tablet.sync().committed.count == 1)
                #expect(try await tablet.store.contents() == server.contents())
            }
        }
    }
}
