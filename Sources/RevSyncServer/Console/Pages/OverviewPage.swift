/// The overview: the revision, devices live, the database, the snapshot, fleet currency (which
/// devices lack what), the last hour's traffic, records per entity.
struct OverviewPage: ConsolePage {
    static let template = "overview"

    struct Snapshot: ConsoleView {
        var revision: Int64
        var age: String
    }

    /// One group of fleet currency, with every device in it (none hidden).
    struct Bucket: ConsoleView {
        var key: String
        var count: Int
        var label: String
        var hint: String
        var devices: [DeviceLink]
    }

    struct DeviceLink: ConsoleView {
        var id: Int64
        var name: String
        /// How far behind, or since when silent.
        var detail: String?
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
    var databaseSize: String
    var snapshot: Snapshot?
    var currency: [Bucket]
    /// An SVG the server draws from numbers only (``TrafficChart``): the one unescaped value.
    var chart: String
    var syncs: Int
    var commits: Int
    var refusals: Int
    var records: [RecordCount]

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Overview</h1>
        <section class="figures">
          <div class="figure"><span class="label">Revision</span><span class="value" id="revision">{{maxRevision}}</span></div>
          <div class="figure"><span class="label">Devices live now</span><span class="value" id="live">{{live}} of {{devices}}</span></div>
          <div class="figure"><span class="label">Database</span><span class="value">{{databaseSize}}</span></div>
          <div class="figure"><span class="label">Snapshot</span><span class="value">{{#snapshot}}revision {{revision}}, {{age}} old{{/snapshot}}{{^snapshot}}none yet{{/snapshot}}</span></div>
        </section>
        <h2>Fleet currency</h2>
        <section class="currency" id="currency">
          {{#currency}}
          <div class="bucket {{key}}" id="currency-{{key}}">
            <span class="count">{{count}}</span> <span class="label">{{label}}</span>
            <p class="hint">{{hint}}</p>
            <ul class="names">{{#devices}}<li><a href="/admin/devices/{{id}}">{{name}}</a>{{#detail}} <span class="muted">{{detail}}</span>{{/detail}}</li>{{/devices}}</ul>
          </div>
          {{/currency}}
        </section>
        <h2>The last hour</h2>
        <figure class="chart">{{{chart}}}
          <figcaption>Per minute: <span class="key syncs">syncs</span> <span class="key commits">commits</span> <span class="key refusals">refusals</span>. In the hour: {{syncs}} syncs, {{commits}} commits, {{refusals}} refusals.</figcaption>
        </figure>
        <h2>Records</h2>
        <table class="compact">
          <thead><tr><th>Entity</th><th class="number">Records</th></tr></thead>
          <tbody>{{#records}}<tr><td>{{entity}}</td><td class="number">{{count}}</td></tr>{{/records}}</tbody>
        </table>
        {{/content}}{{/layout}}
        """
}
