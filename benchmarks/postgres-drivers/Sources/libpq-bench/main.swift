import CPostgres
import Foundation

let url = CommandLine.arguments[1]
nonisolated(unsafe) let c = PQconnectdb(url)!
precondition(PQstatus(c) == CONNECTION_OK)
func exec(_ sql: String) { let r = PQexec(c, sql); precondition(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, String(cString: PQerrorMessage(c))); PQclear(r) }
func prepared(_ name: String, _ params: [String]) -> [[String]] {
    let copies = params.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let r = PQexecPrepared(c, name, Int32(params.count), copies.map { UnsafePointer($0) }, nil, nil, 0)
    precondition(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK, String(cString: PQerrorMessage(c)))
    var rows: [[String]] = []
    for i in 0..<PQntuples(r) { rows.append((0..<PQnfields(r)).map { String(cString: PQgetvalue(r, i, $0)) }) }
    PQclear(r)
    return rows
}
exec("CREATE TABLE IF NOT EXISTS bench (id BIGINT PRIMARY KEY, revision BIGINT, name TEXT, value DOUBLE PRECISION)")
exec("TRUNCATE bench")
for i in 0..<1000 { exec("INSERT INTO bench VALUES (\(i), 1, 'name \(i)', \(Double(i)))") }
PQclear(PQprepare(c, "point", "SELECT id, revision, name, value FROM bench WHERE id = $1", 0, nil))
var start = Date()
for i in 0..<10_000 { let rows = prepared("point", [String(i % 1000)]); _ = (Int64(rows[0][0])!, Int64(rows[0][1])!, rows[0][2], Double(rows[0][3])!) }
print("libpq point select: \(String(format: "%.1f", Date().timeIntervalSince(start) / 10_000 * 1e6)) µs")
exec("CREATE TABLE IF NOT EXISTS counter (id INT PRIMARY KEY, revision BIGINT)")
exec("INSERT INTO counter VALUES (1, 0) ON CONFLICT DO NOTHING")
PQclear(PQprepare(c, "lock", "SELECT revision FROM counter WHERE id = 1 FOR UPDATE", 0, nil))
PQclear(PQprepare(c, "upd", "UPDATE bench SET revision = $1 WHERE id = $2", 0, nil))
PQclear(PQprepare(c, "ctr", "UPDATE counter SET revision = $1 WHERE id = 1", 0, nil))
start = Date()
for i in 0..<2_000 {
    exec("BEGIN")
    let revision = Int64(prepared("lock", [])[0][0])!
    _ = prepared("upd", [String(revision + 1), String(i % 1000)])
    _ = prepared("ctr", [String(revision + 1)])
    exec("COMMIT")
}
print("libpq transaction (lock, select, 2 updates): \(String(format: "%.1f", Date().timeIntervalSince(start) / 2_000 * 1e6)) µs")
