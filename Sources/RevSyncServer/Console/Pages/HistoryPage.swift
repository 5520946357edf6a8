/// A record's history: its changes, oldest first as the CLI and the API list them, each as what
/// changed (`name: "U12" → "U12 Lions"`) with the whole record on demand, and `Revert…` where a
/// revert is possible (otherwise why not); `Erase…` for the record. A record is looked up by its
/// ID, or found by an attribute's value (`?attribute=players.last_name&value=Lopez`).
struct HistoryPage: ConsolePage {
    static let template = "history"

    struct EntityOption: ConsoleView {
        var name: String
        var selected: Bool
    }

    struct Change: ConsoleView {
        var revision: Int64
        var time: String
        var who: String
        /// `update`, or `create, a revert of revision 8`.
        var operation: String
        /// What changed, a line per attribute.
        var diff: [String]
        /// The whole record after the change (before it, for a delete).
        var whole: [String]
        var wholeLabel: String
        var hasWhole: Bool
        var revertURL: String?
        /// Why it cannot be reverted, where it cannot.
        var note: String?
        /// The images among its attachments, small.
        var thumbnails: [Thumbnail] = []
    }

    /// The attributes one can search, an entity's in a group.
    struct SearchGroup: ConsoleView {
        var entity: String
        var options: [SearchOption]
    }

    struct SearchOption: ConsoleView {
        var value: String
        var label: String
        var selected: Bool
    }

    /// A record found by an attribute's value.
    struct Found: ConsoleView {
        var title: String
        var url: String
        var summary: String
    }

    /// An image attachment of a change, shown small (`/admin/attachments/{sha256}?type=…`).
    struct Thumbnail: ConsoleView {
        var url: String
        var label: String
    }

    let title = "Record history"
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var entities: [EntityOption]
    var idText: String
    var error: String?
    var searched: Bool
    var heading: String
    var changes: [Change]
    var olderURL: String?
    var newestURL: String?
    /// The confirmation of erasing the record looked up.
    var eraseURL: String?
    var searchGroups: [SearchGroup] = []
    var searchValue = ""
    var finding = false
    /// `players whose last_name contains "lopez": 2 records`.
    var foundHeading = ""
    var found: [Found] = []

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Record history</h1>
        <form method="get" action="/admin/history" class="inline" id="lookup">
          <label>Entity <select name="entity" id="entity">{{#entities}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/entities}}</select></label>
          <label>ID <input name="id" id="record-id" value="{{idText}}" inputmode="numeric" required></label>
          <button type="submit" id="look-up">Look up</button>
        </form>
        <form method="get" action="/admin/history" class="inline" id="find" role="search">
          <label>Attribute <select name="attribute" id="find-attribute">{{#searchGroups}}<optgroup label="{{entity}}">{{#options}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/options}}</optgroup>{{/searchGroups}}</select></label>
          <label>Value <input name="value" id="find-value" value="{{searchValue}}" required maxlength="200" placeholder="Lopez"></label>
          <button type="submit" id="find-records">Find</button>
        </form>
        {{#error}}<p class="error" id="error" role="alert">{{error}}</p>{{/error}}
        {{#finding}}
        <h2 id="found-heading">{{foundHeading}}</h2>
        <ul class="found" id="found">{{#found}}<li><a href="{{url}}">{{title}}</a> <span class="muted">{{summary}}</span></li>{{/found}}</ul>
        {{/finding}}
        {{#searched}}
        <h2 id="heading">{{heading}}</h2>
        {{#eraseURL}}<p class="actions"><a class="button danger small" id="erase" href="{{eraseURL}}">Erase…</a> <span class="muted">a person's data, from the server, its history and every device</span></p>{{/eraseURL}}
        <p class="pages">{{#olderURL}}<a href="{{olderURL}}" id="older">Older changes</a> {{/olderURL}}{{#newestURL}}<a href="{{newestURL}}">Newest changes</a>{{/newestURL}}</p>
        <table id="history" class="cards">
          <thead><tr><th>Revision</th><th>Time</th><th>Who</th><th>Change</th><th><span class="hidden">Action</span></th></tr></thead>
          <tbody>
          {{#changes}}
          <tr><td data-label="Revision">{{revision}}</td><td data-label="Time">{{time}}</td><td data-label="Who" class="wrap">{{who}}</td>
            <td data-label="Change" class="wrap"><div class="why"><strong class="operation">{{operation}}</strong>
              <ul class="diff">{{#diff}}<li>{{.}}</li>{{/diff}}</ul>
              {{#thumbnails}}<figure class="thumbnail"><img src="{{url}}" alt="{{label}}" loading="lazy"><figcaption>{{label}}</figcaption></figure>{{/thumbnails}}
              {{#hasWhole}}<details><summary>{{wholeLabel}}</summary><ul class="whole">{{#whole}}<li>{{.}}</li>{{/whole}}</ul></details>{{/hasWhole}}</div></td>
            <td data-label="" class="action">{{#revertURL}}<a class="button small" href="{{revertURL}}">Revert…</a>{{/revertURL}}{{#note}}<span class="muted note">{{note}}</span>{{/note}}</td></tr>
          {{/changes}}
          {{^changes}}<tr><td colspan="5" class="muted">No change to this record is kept.</td></tr>{{/changes}}
          </tbody>
        </table>
        {{/searched}}
        {{/content}}{{/layout}}
        """
}
