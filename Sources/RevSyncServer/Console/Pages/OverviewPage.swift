/// The overview: the revision, devices live, the database, the snapshot; the devices that need
/// attention by name (the others counted by currency), the refusals not handled and the
/// erasures still pending as cards; the last hour's traffic, records per entity.
///
/// Its height does not grow with the fleet: the lists it shows are capped, each with a link to
/// the page that lists them all.
struct OverviewPage: ConsolePage {
    static let template = "overview"

    struct Snapshot: ConsoleView {
        var revision: Int64
        var age: String
    }

    /// One group of fleet currency: how many devices, and the devices page filtered to them.
    struct Bucket: ConsoleView {
        var key: String
        var count: Int
        var label: String
        var hint: String
        var url: String
    }

    /// A device that needs attention, with why.
    struct Attention: ConsoleView {
        var id: Int64
        var name: String
        var reasons: String
    }

    /// A refusal not handled yet.
    struct Refusal: ConsoleView {
        var time: String
        var deviceID: Int64
        var device: String
        var reason: String
    }

    /// An erasure some device may still hold.
    struct Erasure: ConsoleView {
        var id: Int64
        var record: String
        var progress: String
        var holding: String
    }

    struct RecordCount: ConsoleView {
        var entity: String
        var count: Int64
    }

    let title = "Overview"
    var chrome: ConsoleChrome?
    let refresh: Int? = 5
    var maxRevision: Int64
    var live: Int
    var devices: Int
    /// Devices whose records were proven equal to the server's at the latest revision.
    var verified: Int
    /// Devices per schema version: `v1: 3 · v2: 47 (latest)`, or `all on v2`.
    var schemaVersions: String
    /// Each version's count, linking to its devices.
    var versionLinks: [VersionLink]

    struct VersionLink: ConsoleView {
        var label: String
        var url: String
    }
    /// Devices whose app speaks a retired version (older than `minimumVersion`): refused until
    /// their app is updated.
    var retired: [Retired] = []
    var retiredCount = 0
    var retiredMinimum = 0
    /// Whether any device speaks a retired version (Mustache takes `0` as a value, not as false).
    var anyRetired = false
    /// `and 12 more`, when the list is cut: the devices page sorted by client and schema version.
    var retiredMore: String?

    /// A device on a retired schema version.
    struct Retired: ConsoleView {
        var id: Int64
        var name: String
        var version: Int
    }
    var databaseSize: String
    var snapshot: Snapshot?
    var attention: [Attention]
    var attentionCount: Int
    /// `and 12 more`, when the list is cut.
    var attentionMore: String?
    var refusals: [Refusal]
    var refusalCount: Int
    var erasures: [Erasure]
    var erasureCount: Int
    var currency: [Bucket]
    /// Whether each card has something to look at (its border says so).
    var attentionAlert = false
    /// "refusal" or "refusals", "erasure" or "erasures", as the counts above need.
    var refusalNoun = "refusals"
    var erasureNoun = "erasures"
    var refusalAlert = false
    var erasureAlert = false
    /// An SVG the server draws from numbers only (``TrafficChart``): the one unescaped value.
    var chart: String
    var syncs: Int
    var commits: Int
    var refused: Int
    /// "12 syncs, 1 commit, 0 refusals": the hour's counts, each with its noun.
    var hourSummary: String
    var records: [RecordCount]

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Overview</h1>
        <section class="figures">
          <div class="figure"><span class="label">Revision</span><span class="value" id="revision">{{maxRevision}}</span></div>
          <div class="figure"><span class="label">Devices live now</span><span class="value" id="live">{{live}} of {{devices}}</span></div>
          <div class="figure"><span class="label">Proven at the latest revision</span><span class="value" id="verified">{{verified}} of {{devices}}</span></div>
          <div class="figure"><span class="label">App schema versions</span><span class="value wrap" id="schema-versions">{{#versionLinks}}<a href="{{url}}">{{label}}</a> {{/versionLinks}}{{^versionLinks}}{{schemaVersions}}{{/versionLinks}}</span></div>
          <div class="figure"><span class="label">Database</span><span class="value">{{databaseSize}}</span></div>
          <div class="figure"><span class="label">Snapshot</span><span class="value">{{#snapshot}}revision {{revision}}, {{age}} old{{/snapshot}}{{^snapshot}}none yet{{/snapshot}}</span></div>
        </section>
        {{#anyRetired}}<p class="alert-line" id="retired-versions"><strong>{{retiredCount}} on retired schema versions</strong> (older than {{retiredMinimum}}, refused until their app is updated): {{#retired}}<a href="/admin/devices/{{id}}">{{name}}</a> (v{{version}}) {{/retired}}{{#retiredMore}}<a href="/admin/devices?sort=client" id="retired-all">{{retiredMore}}</a>{{/retiredMore}}</p>{{/anyRetired}}
        <section class="cards-grid">
          <div class="card{{#attentionAlert}} alert{{/attentionAlert}}" id="attention">
            <h2><span class="count">{{attentionCount}}</span> need attention</h2>
            <ul class="list">{{#attention}}<li><a href="/admin/devices/{{id}}">{{name}}</a> <span class="muted">{{reasons}}</span></li>{{/attention}}</ul>
            {{^attention}}<p class="muted">No device needs attention.</p>{{/attention}}
            {{#attentionMore}}<p><a href="/admin/devices?currency=attention" id="attention-all">{{attentionMore}}</a></p>{{/attentionMore}}
          </div>
          <div class="card{{#refusalAlert}} alert{{/refusalAlert}}" id="refusals-card">
            <h2><span class="count">{{refusalCount}}</span> {{refusalNoun}} not handled</h2>
            <ul class="list">{{#refusals}}<li><a href="/admin/devices/{{deviceID}}">{{device}}</a> <span class="reason">{{reason}}</span> <span class="muted">{{time}}</span></li>{{/refusals}}</ul>
            {{^refusals}}<p class="muted">Every refusal kept is handled.</p>{{/refusals}}
            <p><a href="/admin/refusals">The refusals</a></p>
          </div>
          <div class="card{{#erasureAlert}} alert{{/erasureAlert}}" id="erasures-card">
            <h2><span class="count">{{erasureCount}}</span> {{erasureNoun}} pending</h2>
            <ul class="list">{{#erasures}}<li>#{{id}} {{record}}: {{progress}} erased <span class="muted">{{holding}}</span></li>{{/erasures}}</ul>
            {{^erasures}}<p class="muted">Every device has removed what was erased.</p>{{/erasures}}
            <p><a href="/admin/erasures">The erasures</a></p>
          </div>
        </section>
        <h2>Fleet currency</h2>
        <section class="currency" id="currency">
          {{#currency}}
          <a class="bucket {{key}}" id="currency-{{key}}" href="{{url}}">
            <span class="count">{{count}}</span> <span class="label">{{label}}</span>
            <span class="hint">{{hint}}</span>
          </a>
          {{/currency}}
        </section>
        <h2>The last hour</h2>
        <figure class="chart">{{{chart}}}
          <figcaption>Per minute: <span class="key syncs">syncs</span> <span class="key commits">commits</span> <span class="key refusals">refusals</span>. In the hour: {{hourSummary}}.</figcaption>
        </figure>
        <h2>Records</h2>
        <table class="compact">
          <thead><tr><th>Entity</th><th class="number">Records</th></tr></thead>
          <tbody>{{#records}}<tr><td>{{entity}}</td><td class="number">{{count}}</td></tr>{{/records}}</tbody>
        </table>
        {{/content}}{{/layout}}
        """
}
