import RevSyncEngine
import RevSyncProtocol

/// What a refused change set wrote, per record and attribute: `base` (what the record held at
/// the change's base revision), `mine` (what the device wrote) and `theirs` (the server's truth
/// when it refused), attributes another device changed marked. A grid of its own, not a table,
/// so that it stays whole inside the cards the refusals and device pages become on a tablet.
enum RefusedRecordsPartial {
    static let name = "refused-records"

    struct Record: ConsoleView {
        var title: String
        /// The record's history, for a record with a permanent ID (a create's is temporary).
        var historyURL: String?
        var rows: [Row]
        var hasRows: Bool
        var note: String?
    }

    struct Row: ConsoleView {
        var name: String
        var base: String
        var mine: String
        var theirs: String
        /// Another device changed it after the base revision.
        var changed: Bool
    }

    static let mustache = """
        {{#records}}<div class="sides">
          <p class="sides-title">{{#historyURL}}<a href="{{historyURL}}">{{title}}</a>{{/historyURL}}{{^historyURL}}{{title}}{{/historyURL}}</p>
          {{#note}}<p class="hint">{{note}}</p>{{/note}}
          {{#hasRows}}<div class="sides-grid" role="table" aria-label="{{title}}">
            <span class="head" role="columnheader">Attribute</span><span class="head" role="columnheader">Base</span><span class="head" role="columnheader">Mine</span><span class="head" role="columnheader">Theirs</span>
            {{#rows}}<span role="cell" class="name{{#changed}} changed{{/changed}}">{{name}}{{#changed}} <em>changed by others</em>{{/changed}}</span><span role="cell">{{base}}</span><span role="cell">{{mine}}</span><span role="cell" class="{{#changed}}changed{{/changed}}">{{theirs}}</span>
            {{/rows}}</div>{{/hasRows}}
        </div>{{/records}}
        """

    /// The records of one refusal, for the partial; when the server cannot show them (an
    /// erasure removed them, or they cannot be read), a note that says so.
    static func records(of refusal: StoredRefusal) -> [Record] {
        if let note = refusal.detailNote { return [Record(title: "What it wrote", historyURL: nil, rows: [], hasRows: false, note: note)] }
        return records(refusal.records)
    }

    static func records(_ records: [RefusedRecord]) -> [Record] {
        records.map { record in
            let based = record.baseRevision.map { ", based on revision \($0)" } ?? ""
            let title = "\(record.entity) #\(record.id.rawValue): \(record.operation.rawValue)\(based)"
            let changed = Set(record.changedByOthers)
            let rows = record.attributeNames.map { name in
                Row(
                    name: name,
                    base: record.operation == .create ? "–" : record.base.map { text($0[name]) } ?? "unknown",
                    mine: record.operation == .delete ? "deleted" : text(record.mine[name]),
                    theirs: record.theirs.map { text($0[name]) } ?? "not on the server",
                    changed: changed.contains(name))
            }
            var note: String?
            if record.theirs == nil && record.operation != .create {
                note = "The server no longer has this record."
            } else if record.base == nil && record.operation != .create {
                note = "Its history at the base revision is no longer kept."
            }
            let history =
                record.id.rawValue > 0
                ? "/admin/history?entity=\(ConsoleController.queryValue(record.entity))&id=\(record.id.rawValue)" : nil
            return Record(title: title, historyURL: history, rows: rows, hasRows: !rows.isEmpty, note: note)
        }
    }

    private static func text(_ value: Value?) -> String {
        ConsoleFormat.display(value ?? .null)
    }
}
