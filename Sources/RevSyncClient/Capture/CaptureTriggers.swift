import Foundation
import RevSyncProtocol
import RevSyncSQLite

/// The SQL that turns plain writes on the store's connection into captured events: temporary
/// triggers on the writer connection only (nothing is added to the file, so other programs can
/// open it), regenerated whenever the schema changes.
///
/// Per entity:
/// - before an insert whose ID a record already has (`INSERT OR REPLACE`, `REPLACE INTO`, an
///   upsert), `revsync_replacing` notes the record as it is: a replacement becomes the update
///   the app meant, never a delete that cascades to every device;
/// - after an insert or an update, references must point at records the store holds;
///   `revsync_inserted` / `revsync_updated` judge the row and return the event to journal;
///   a row that needs a temporary ID, holds a temporary ID the server has replaced, or lost
///   its revision to a replacement, is fixed in place (an update the functions recognise as
///   their own);
/// - before a delete, `revsync_deleting` plans it under the delete rules and checks it; after
///   it, the rules are carried out: `cascade` deletes the children, `nullify` clears their
///   references (each of which the functions recognise as part of the delete); not for the
///   delete of a replacement.
///
/// A refused row is not stopped: its refusal's number goes into `temp._rs_capture_refusals`,
/// whose rows roll back with the savepoint or statement that wrote them, and the refusals left
/// at the commit refuse the transaction. The store's own tables cannot be written: a write to
/// them is skipped and refused the same way. Every internal function takes the capture's nonce
/// first, so that app SQL cannot call one.
enum CaptureTriggers {
    static let prefix = "_rs_capture_"
    /// The refusals standing in the current transaction, by number (a temporary table).
    static let refusalsTable = "_rs_capture_refusals"

    /// Every statement creating the triggers for `schema` and the store's own `tables`.
    static func statements(for schema: Schema, ownTables: [String], nonce: String) -> [String] {
        let n = "'\(nonce)'"
        var statements: [String] = [
            "CREATE TEMP TABLE IF NOT EXISTS \(refusalsTable) (number INTEGER PRIMARY KEY)"
        ]
        for entity in schema.entities {
            statements += triggers(for: entity, in: schema, nonce: n)
        }
        for table in ownTables {
            let name = q(table)
            if table == "_rs_capture" {
                // A row that judged to nothing journals nothing; one that was refused leaves its
                // refusal's number.
                statements.append(
                    """
                    CREATE TEMP TRIGGER \(q(prefix + "skip_" + table)) BEFORE INSERT ON main.\(name)
                    WHEN revsync_capturing(\(n)) AND NEW.event IS NULL BEGIN
                        INSERT OR IGNORE INTO \(refusalsTable) (number) SELECT revsync_pending_refusal(\(n)) WHERE revsync_pending_refusal(\(n)) IS NOT NULL;
                        SELECT RAISE(IGNORE);
                    END
                    """)
            }
            // The marks of writes to entity tables come from triggers in the file, while the app
            // writes too: a mark is only ever added (it makes the digest count a record again).
            let marks = table.hasPrefix(StoreMarks.tablePrefix)
            for operation in ["INSERT", "UPDATE", "DELETE"] where !(marks && operation == "INSERT") {
                let condition =
                    table == "_rs_capture" && operation == "INSERT"
                    ? "revsync_capturing(\(n)) AND NEW.event IS NOT NULL AND NOT revsync_take_journaling(\(n))" : "revsync_capturing(\(n))"
                statements.append(
                    """
                    CREATE TEMP TRIGGER \(q(prefix + "protect_" + operation.lowercased() + "_" + table)) BEFORE \(operation) ON main.\(name)
                    WHEN \(condition) BEGIN
                        INSERT INTO \(refusalsTable) (number) VALUES (revsync_refuse(\(n), '\(table)'));
                        SELECT RAISE(IGNORE);
                    END
                    """)
            }
        }
        return statements
    }

    private typealias References = [(attribute: Attribute, target: String)]

    private static func triggers(for entity: Entity, in schema: Schema, nonce n: String) -> [String] {
        let table = "main." + q(entity.name)
        let name = literal(entity.name)
        let columns = entity.attributes.map { q($0.name) }
        let references: References = entity.attributes.compactMap { attribute in attribute.referenceTarget.map { (attribute, $0) } }
        let fix = fixStatement(entity, references: references, nonce: n)
        var statements: [String] = []
        statements.append(
            """
            CREATE TEMP TRIGGER \(q(prefix + "replace_" + entity.name)) BEFORE INSERT ON \(table)
            WHEN revsync_capturing(\(n)) AND EXISTS (SELECT 1 FROM \(table) WHERE id = NEW.id) BEGIN
                SELECT revsync_replacing(\(n), \(name), NEW.id);
            END
            """)
        statements.append(
            """
            CREATE TEMP TRIGGER \(q(prefix + "insert_" + entity.name)) AFTER INSERT ON \(table) WHEN revsync_capturing(\(n)) BEGIN
                \(referenceChecks(references, of: entity, row: "NEW", onlyChanged: false, nonce: n).joined(separator: "\n    "))
                INSERT INTO _rs_capture (event) VALUES (revsync_inserted(\(n), \(name), NEW.id, NEW.revision\(
                    columns.map { ", NEW.\($0)" }.joined(separator: ""))));
                \(fix)
            END
            """)
        statements.append(
            """
            CREATE TEMP TRIGGER \(q(prefix + "update_" + entity.name)) AFTER UPDATE ON \(table) WHEN revsync_capturing(\(n)) BEGIN
                \(referenceChecks(references, of: entity, row: "NEW", onlyChanged: true, nonce: n).joined(separator: "\n    "))
                INSERT INTO _rs_capture (event) VALUES (revsync_updated(\(n), \(name), OLD.id, NEW.id, OLD.revision, NEW.revision\(
                    columns.map { ", OLD.\($0), NEW.\($0)" }.joined(separator: ""))));
                \(references.isEmpty ? "" : fix)
            END
            """)
        return statements + deleteTriggers(for: entity, in: schema, references: references, nonce: n)
    }

    /// Refuses a row whose reference names a record the store does not have (a temporary ID
    /// the server replaced counts as its permanent one, of the reference's target only).
    private static func referenceChecks(
        _ references: References, of entity: Entity, row: String, onlyChanged: Bool, nonce n: String
    ) -> [String] {
        let name = literal(entity.name)
        return references.map { attribute, target in
            let column = q(attribute.name)
            let changed = onlyChanged ? " AND NEW.\(column) IS NOT OLD.\(column)" : ""
            return """
                INSERT INTO \(refusalsTable) (number) SELECT revsync_missing_reference(\(n), \(name), \(row).id, \(literal(attribute.name)), \(row).\(column), \(literal(target)))
                WHERE typeof(\(row).\(column)) = 'integer'\(changed) AND NOT EXISTS (SELECT 1 FROM main.\(q(target)) WHERE id = \
                COALESCE((SELECT permanent_id FROM main._rs_id_map WHERE temporary_id = \(row).\(column) AND entity = \(literal(target))), \(row).\(column)));
                """
        }
    }

    /// Gives the row the ID (and revision) the functions chose and resolves replaced temporary
    /// IDs: only as a record of the reference's target (one of another entity stays as it is,
    /// and the reference check refuses it).
    private static func fixStatement(_ entity: Entity, references: References, nonce n: String) -> String {
        let mapped =
            references.isEmpty
            ? "0"
            : "EXISTS (SELECT 1 FROM main._rs_id_map WHERE \(references.map { "(temporary_id = NEW.\(q($0.attribute.name)) AND entity = \(literal($0.target)))" }.joined(separator: " OR ")))"
        let resolving: String = references.map { attribute, target in
            let column = q(attribute.name)
            return
                ", \(column) = COALESCE((SELECT permanent_id FROM main._rs_id_map WHERE temporary_id = \(column) AND entity = \(literal(target))), \(column))"
        }.joined(separator: "")
        return
            "UPDATE \(q(entity.name)) SET id = revsync_fixed_id(\(n), id), revision = revsync_fixed_revision(\(n), id, revision)\(resolving) WHERE id = NEW.id AND CASE WHEN revsync_renaming(\(n)) OR \(mapped) THEN revsync_fixing(\(n), \(literal(entity.name)), NEW.id, 1) ELSE 0 END;"
    }

    /// A delete's capture, and the delete rules of the references to the entity.
    private static func deleteTriggers(
        for entity: Entity, in schema: Schema, references: References, nonce n: String
    ) -> [String] {
        let table = "main." + q(entity.name)
        let name = literal(entity.name)
        let columns = entity.attributes.map { q($0.name) }
        // A record a cascade reaches has lost the record its cascading reference pointed at.
        let cascading = references.filter { attribute, _ in
            if case .reference(_, .cascade) = attribute.type { return true }
            return false
        }
        let orphaned =
            cascading.isEmpty
            ? "0"
            : cascading.map { attribute, target in
                "(OLD.\(q(attribute.name)) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM main.\(q(target)) WHERE id = OLD.\(q(attribute.name))))"
            }.joined(separator: " OR ")
        var statements = [
            """
            CREATE TEMP TRIGGER \(q(prefix + "delete_" + entity.name)) BEFORE DELETE ON \(table) WHEN revsync_capturing(\(n)) BEGIN
                INSERT INTO _rs_capture (event) VALUES (revsync_deleting(\(n), \(name), OLD.id, OLD.revision, \(orphaned)\(
                    columns.map { ", OLD.\($0)" }.joined(separator: ""))));
            END
            """
        ]
        let rules: [String] = schema.references(to: entity.name).compactMap { reference in
            let child = q(reference.entity)
            let column = q(reference.attribute)
            switch reference.rule {
            case .cascade: return "DELETE FROM \(child) WHERE \(column) = OLD.id;"
            case .nullify: return "UPDATE \(child) SET \(column) = NULL WHERE \(column) = OLD.id;"
            default: return nil
            }
        }
        if !rules.isEmpty {
            statements.append(
                """
                CREATE TEMP TRIGGER \(q(prefix + "rules_" + entity.name)) AFTER DELETE ON \(table)
                WHEN revsync_capturing(\(n)) AND NOT revsync_replaced(\(n), \(name), OLD.id) BEGIN
                    \(rules.joined(separator: "\n    "))
                END
                """)
        }
        return statements
    }

    private static func q(_ name: String) -> String { SQLIdentifier.quoted(name) }

    /// A SQL string literal of a schema name (`^[a-z][a-z0-9_]*$`: nothing to escape, but
    /// escaped anyway).
    private static func literal(_ name: String) -> String {
        "'" + name.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
