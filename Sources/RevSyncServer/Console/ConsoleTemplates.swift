/// The console's pages as Mustache templates (rendered by swift-mustache, every `{{value}}`
/// HTML-escaped), kept in the binary so that the server is one file to deploy.
///
/// Each page fills the `content` block of `layout`. The only unescaped value is `{{{chart}}}`,
/// an SVG the server draws from numbers (``TrafficChart``).
enum ConsoleTemplates {
    static let all: [String: String] = [
        "layout": layout, "login": login, "overview": overview, "devices": devices, "token": token, "device": device,
        "confirm": confirm, "refusals": refusals, "history": history, "message": message,
    ]

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · RevSync console</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="/admin/static/console.css">
        <script src="/admin/static/console.js" defer></script>
        </head>
        <body{{#refresh}} data-refresh="{{refresh}}"{{/refresh}}>
        <header class="bar">
          <a class="brand" href="/admin">RevSync</a>
          {{#session}}
          <nav>
            <a href="/admin"{{#nav.overview}} aria-current="page"{{/nav.overview}}>Overview</a>
            <a href="/admin/devices"{{#nav.devices}} aria-current="page"{{/nav.devices}}>Devices</a>
            <a href="/admin/refusals"{{#nav.refusals}} aria-current="page"{{/nav.refusals}}>Refusals</a>
            <a href="/admin/history"{{#nav.history}} aria-current="page"{{/nav.history}}>History</a>
          </nav>
          <form class="signout" method="post" action="/admin/logout">
            <input type="hidden" name="csrf" value="{{csrf}}">
            <span class="who">{{operator}}</span>
            <button type="submit" id="sign-out">Sign out</button>
          </form>
          {{/session}}
        </header>
        <main id="content">
        {{$content}}{{/content}}
        </main>
        </body>
        </html>
        """

    static let login = """
        {{<layout}}{{$content}}
        <section class="login">
          <h1>Sign in</h1>
          <p>With an admin token (<code>revsync-server token create --role admin</code>).</p>
          {{#error}}<p class="error" id="error" role="alert">{{error}}</p>{{/error}}
          <form method="post" action="/admin/login">
            <input type="hidden" name="csrf" value="{{loginCsrf}}">
            <label for="token">Admin token</label>
            <input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required autofocus>
            <button type="submit" id="sign-in">Sign in</button>
          </form>
        </section>
        {{/content}}{{/layout}}
        """

    static let overview = """
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
            <ul>{{#devices}}<li><a href="/admin/devices/{{id}}">{{name}}</a>{{#detail}} <span class="muted">{{detail}}</span>{{/detail}}</li>{{/devices}}</ul>
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

    static let devices = """
        {{<layout}}{{$content}}
        <h1>Devices</h1>
        <p class="muted">Revision {{maxRevision}}. Sorted by {{sortLabel}}; click a column to sort.</p>
        <div class="scroll">
        <table id="devices">
          <thead><tr>{{#columns}}<th{{#number}} class="number"{{/number}}><a href="/admin/devices?sort={{key}}&amp;order={{order}}">{{label}}{{#active}} {{arrow}}{{/active}}</a></th>{{/columns}}<th></th></tr></thead>
          <tbody>
          {{#rows}}
          <tr id="device-{{id}}" data-name="{{name}}" class="{{#revoked}}revoked{{/revoked}} {{currency}}">
            <td><a href="/admin/devices/{{id}}">{{name}}</a></td>
            <td>{{user}}</td>
            <td>{{role}}</td>
            <td>{{lastSeen}}</td>
            <td class="number">{{revision}}</td>
            <td class="number behind">{{behind}}</td>
            <td>{{behindTime}}</td>
            <td class="number">{{pending}}</td>
            <td class="live">{{#live}}● live{{/live}}{{^live}}–{{/live}}</td>
            <td>{{clientVersion}}</td>
            <td>{{#lastRefusal}}<span class="reason">{{reason}}</span> {{time}}{{/lastRefusal}}</td>
            <td>{{#revoked}}revoked{{/revoked}}{{^revoked}}<a class="button danger" href="/admin/devices/{{id}}/revoke">Revoke…</a>{{/revoked}}</td>
          </tr>
          {{/rows}}
          </tbody>
        </table>
        </div>
        <h2>Create a token</h2>
        <form method="post" action="/admin/devices" class="inline" id="create-token">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <label>Name <input name="name" id="new-name" required maxlength="200"></label>
          <label>Role <select name="role" id="new-role">{{#roles}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/roles}}</select></label>
          {{#hasUsers}}<label>User (record ID) <input name="user" id="new-user" inputmode="numeric" pattern="[0-9]*"></label>{{/hasUsers}}
          <button type="submit" id="create">Create</button>
        </form>
        {{/content}}{{/layout}}
        """

    static let token = """
        {{<layout}}{{$content}}
        <h1>Token created</h1>
        <p>The token of <strong>{{name}}</strong> ({{role}}). It is shown this once: copy it to the device now.</p>
        <p class="token"><code id="new-token">{{token}}</code> <button type="button" data-copy="new-token" id="copy">Copy</button></p>
        <p><a href="/admin/devices">Back to the devices</a></p>
        {{/content}}{{/layout}}
        """

    static let device = """
        {{<layout}}{{$content}}
        <h1>{{name}}</h1>
        <section class="figures">
          <div class="figure"><span class="label">Role</span><span class="value">{{role}}{{#user}}, user {{user}}{{/user}}</span></div>
          <div class="figure"><span class="label">Last seen</span><span class="value">{{lastSeen}}</span></div>
          <div class="figure"><span class="label">Revision</span><span class="value" id="device-revision">{{revision}} ({{behind}} behind)</span></div>
          <div class="figure"><span class="label">Pending</span><span class="value">{{pending}}</span></div>
          <div class="figure"><span class="label">Live</span><span class="value">{{#live}}yes{{/live}}{{^live}}no{{/live}}</span></div>
          <div class="figure"><span class="label">Client</span><span class="value">{{clientVersion}}</span></div>
        </section>
        {{#revoked}}<p class="error">This token is revoked.</p>{{/revoked}}
        <h2>Recent change sets</h2>
        <div class="scroll">
        <table id="change-sets">
          <thead><tr><th>Time</th><th>Outcome</th><th>Change set</th><th>Records</th><th></th></tr></thead>
          <tbody>
          {{#changeSets}}
          <tr class="{{kind}}"><td>{{time}}</td><td>{{outcome}}</td><td><code>{{changeSet}}</code></td><td>{{records}}</td>
            <td>{{#revision}}<a href="/admin/revert?revision={{revision}}">Revert…</a>{{/revision}}</td></tr>
          {{/changeSets}}
          {{^changeSets}}<tr><td colspan="5" class="muted">None kept.</td></tr>{{/changeSets}}
          </tbody>
        </table>
        </div>
        {{/content}}{{/layout}}
        """

    static let confirm = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p>{{question}}</p>
        {{#details}}<ul class="details">{{#items}}<li>{{.}}</li>{{/items}}</ul>{{/details}}
        <form method="post" action="{{action}}">
          <input type="hidden" name="csrf" value="{{csrf}}">
          {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
          <button type="submit" class="danger" id="confirm">{{button}}</button>
          <a href="{{back}}">Cancel</a>
        </form>
        {{/content}}{{/layout}}
        """

    static let refusals = """
        {{<layout}}{{$content}}
        <h1>Refusals</h1>
        <p class="reasons">{{#reasons}}<span class="chip">{{reason}} <strong>{{count}}</strong></span> {{/reasons}}{{^reasons}}No refused change sets are kept.{{/reasons}}</p>
        <div class="scroll">
        <table id="refusals">
          <thead><tr><th>Time</th><th>Device</th><th>Reason</th><th>Change set</th><th>Entries</th></tr></thead>
          <tbody>
          {{#rows}}
          <tr><td>{{time}}</td><td><a href="/admin/devices/{{deviceID}}">{{device}}</a></td><td class="reason">{{reason}}</td>
            <td><code>{{changeSet}}</code></td><td><ul class="entries">{{#entries}}<li>{{.}}</li>{{/entries}}</ul></td></tr>
          {{/rows}}
          </tbody>
        </table>
        </div>
        {{/content}}{{/layout}}
        """

    static let history = """
        {{<layout}}{{$content}}
        <h1>Record history</h1>
        <form method="get" action="/admin/history" class="inline" id="lookup">
          <label>Entity <select name="entity" id="entity">{{#entities}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/entities}}</select></label>
          <label>ID <input name="id" id="record-id" value="{{id}}" inputmode="numeric" required></label>
          <button type="submit" id="look-up">Look up</button>
        </form>
        {{#searched}}
        <div class="scroll">
        <table id="history">
          <thead><tr><th>Revision</th><th>Time</th><th>Device</th><th>Operation</th><th>Before</th><th>After</th><th></th></tr></thead>
          <tbody>
          {{#changes}}
          <tr><td>{{revision}}</td><td>{{time}}</td><td>{{device}}{{#user}} (user {{user}}){{/user}}</td><td>{{operation}}</td>
            <td class="values">{{before}}</td><td class="values">{{after}}</td>
            <td><a href="/admin/revert?revision={{revision}}">Revert…</a></td></tr>
          {{/changes}}
          {{^changes}}<tr><td colspan="7" class="muted">No change to this record is kept.</td></tr>{{/changes}}
          </tbody>
        </table>
        </div>
        {{/searched}}
        {{/content}}{{/layout}}
        """

    static let message = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p class="{{kind}}" id="message" role="status">{{text}}</p>
        <p><a href="{{back}}">{{backLabel}}</a></p>
        {{/content}}{{/layout}}
        """
}
