/// The refused change sets of the whole fleet (or of one device) that no operator marked
/// handled (all of them with `?handled=1`), counted by reason, each with why, per record, and
/// `Mark handled`.
struct RefusalsPage: ConsolePage {
    static let template = "refusals"

    struct ReasonCount: ConsoleView {
        var reason: String
        var count: Int
    }

    struct Row: ConsoleView {
        var time: String
        var deviceID: Int64
        var device: String
        var reason: String
        var changeSet: String
        var entries: [String]
        /// Base, mine and theirs of its first records.
        var records: [RefusedRecordsPartial.Record]
        var handling: RefusalHandlingPartial.Handling?
        /// Why nothing is offered (a wiped device's refusal).
        var moot: String?
        var handled: Bool
    }

    let title = "Refusals"
    var chrome: ConsoleChrome?
    let refresh: Int? = 5
    var reasons: [ReasonCount]
    var rows: [Row]
    var note: String
    /// The link that shows (or hides) the refusals marked handled, and its words.
    var toggleURL: String
    var toggleLabel: String

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Refusals</h1>
        <p class="reasons">{{#reasons}}<span class="chip">{{reason}} <strong>{{count}}</strong></span> {{/reasons}}{{^reasons}}No refused change set waits to be handled.{{/reasons}}</p>
        <p class="muted">{{note}} <a href="{{toggleURL}}" id="toggle-handled">{{toggleLabel}}</a></p>
        <table id="refusals" class="cards">
          <thead><tr><th>Time</th><th>Device</th><th>Reason</th><th>Change set</th><th>Why, per record</th><th><span class="hidden">Action</span></th></tr></thead>
          <tbody>
          {{#rows}}
          <tr class="refusal{{#handled}} handled{{/handled}}" data-device="{{deviceID}}" data-change-set="{{changeSet}}"><td data-label="Time">{{time}}</td><td data-label="Device"><a href="/admin/devices/{{deviceID}}">{{device}}</a></td>
            <td data-label="Reason" class="reason">{{reason}}</td><td data-label="Change set"><code>{{changeSet}}</code></td>
            <td data-label="Why" class="wrap"><div class="why"><ul class="entries">{{#entries}}<li>{{.}}</li>{{/entries}}</ul>{{>refused-records}}</div></td>
            <td data-label="" class="action">{{>refusal-handling}}</td></tr>
          {{/rows}}
          </tbody>
        </table>
        {{/content}}{{/layout}}
        """
}
