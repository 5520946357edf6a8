/// One device: what the server knows of it, the change sets it had refused (with why), and
/// those it committed (a few records each, with counts), each with `Revert…` unless undone.
struct DevicePage: ConsolePage {
    static let template = "device"

    /// A refused change set: why, per record. Never a revert: nothing was committed.
    struct Refused: ConsoleView {
        var time: String
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

    /// A committed change set.
    struct Committed: ConsoleView {
        var revision: Int64
        var time: String
        var changeSet: String
        /// Its first records, and how many more.
        var records: String
        /// How many records of each entity it created, updated and deleted.
        var counts: String
        /// Where `Revert…` leads; `nil` when it cannot be offered (with ``note`` saying why).
        var revertURL: String?
        var note: String?
    }

    var title: String
    var chrome: ConsoleChrome?
    let refresh: Int? = 5
    var id: Int64
    var name: String
    var role: String
    var user: String?
    var lastSeen: String
    var revision: String
    var state: String
    var pending: String
    var live: Bool
    var clientVersion: String
    /// When its offline lease ends (`nil`: no lease, or the device is revoked or never seen).
    var lease: String?
    /// Why the server refuses its app's schema version (`nil`: it does not), on a line of its own.
    var versionRefusal: String?
    /// The last proof of its records (``ConsoleController/verification(_:report:)``), and its
    /// last repair or a difference found since.
    var verified: String
    var repaired: String?
    var differs: String?
    var revoked: Bool
    /// The wipe ordered with the revocation: pending, or what the device's receipt says.
    var wipe: String?
    /// Whether *Revoke and wipe…* is offered (no wipe ordered yet).
    var canWipe: Bool
    var refused: [Refused]
    var refusedNote: String
    var committed: [Committed]
    /// The link to older committed change sets, if there are any.
    var olderURL: String?
    /// The link back to the newest, on an older page.
    var newestURL: String?

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>{{name}}</h1>
        <section class="figures">
          <div class="figure"><span class="label">Role</span><span class="value">{{role}}{{#user}}, {{user}}{{/user}}</span></div>
          <div class="figure"><span class="label">Last seen</span><span class="value">{{lastSeen}}</span></div>
          <div class="figure"><span class="label">Revision</span><span class="value" id="device-revision">{{revision}} ({{state}})</span></div>
          <div class="figure"><span class="label">Pending</span><span class="value">{{pending}}</span></div>
          <div class="figure"><span class="label">Live</span><span class="value">{{#live}}yes{{/live}}{{^live}}no{{/live}}</span></div>
          <div class="figure"><span class="label">Verified</span><span class="value" id="device-verified">{{verified}}{{#differs}} <span class="flag mismatch">{{differs}}</span>{{/differs}}{{#repaired}} <span class="flag repair">{{repaired}}</span>{{/repaired}}</span></div>
          {{#lease}}<div class="figure"><span class="label">Offline lease</span><span class="value" id="device-lease">{{lease}}</span></div>{{/lease}}
          <div class="figure wide"><span class="label">Client</span><span class="value detail" id="device-client">{{clientVersion}}</span></div>
        </section>
        {{#versionRefusal}}<p class="error" id="device-version-refusal">{{versionRefusal}}</p>{{/versionRefusal}}
        {{#revoked}}<p class="error">This token is revoked.</p>{{/revoked}}
        {{#wipe}}<p class="error" id="device-wipe">{{wipe}}</p>{{/wipe}}
        {{#canWipe}}<p><a class="button danger" id="revoke-and-wipe" href="/admin/devices/{{id}}/wipe">Revoke and wipe…</a></p>{{/canWipe}}
        <h2>Refused change sets</h2>
        <p class="muted">{{refusedNote}}</p>
        <table id="refused" class="cards">
          <thead><tr><th>Time</th><th>Reason</th><th>Change set</th><th>Why, per record</th><th><span class="hidden">Action</span></th></tr></thead>
          <tbody>
          {{#refused}}
          <tr class="refused{{#handled}} handled{{/handled}}"><td data-label="Time">{{time}}</td><td data-label="Reason" class="reason">{{reason}}</td>
            <td data-label="Change set"><code>{{changeSet}}</code></td>
            <td data-label="Why" class="wrap"><div class="why"><ul class="entries">{{#entries}}<li>{{.}}</li>{{/entries}}</ul>{{>refused-records}}</div></td>
            <td data-label="" class="action">{{>refusal-handling}}</td></tr>
          {{/refused}}
          {{^refused}}<tr><td colspan="5" class="muted">None kept.</td></tr>{{/refused}}
          </tbody>
        </table>
        <h2>Committed change sets</h2>
        <table id="change-sets" class="cards">
          <thead><tr><th>Revision</th><th>Time</th><th>Change set</th><th>Records</th><th><span class="hidden">Action</span></th></tr></thead>
          <tbody>
          {{#committed}}
          <tr class="committed"><td data-label="Revision">{{revision}}</td><td data-label="Time">{{time}}</td>
            <td data-label="Change set"><code>{{changeSet}}</code></td>
            <td data-label="Records" class="wrap">{{records}}<br><span class="muted">{{counts}}</span></td>
            <td data-label="" class="action">{{#revertURL}}<a class="button small" href="{{revertURL}}">Revert…</a>{{/revertURL}}{{#note}}<span class="muted">{{note}}</span>{{/note}}</td></tr>
          {{/committed}}
          {{^committed}}<tr><td colspan="5" class="muted">None kept.</td></tr>{{/committed}}
          </tbody>
        </table>
        <p class="pages">{{#newestURL}}<a href="{{newestURL}}">Newest change sets</a> {{/newestURL}}{{#olderURL}}<a href="{{olderURL}}" id="older">Older change sets</a>{{/olderURL}}</p>
        {{/content}}{{/layout}}
        """
}
