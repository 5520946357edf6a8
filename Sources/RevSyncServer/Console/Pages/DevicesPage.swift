/// Every token with what the server knows of its device, sortable by any column and filtered
/// by name, role and currency (`?name=&role=&currency=`); the form to create a token at the
/// top, and a `Revoke…` per token.
struct DevicesPage: ConsolePage {
    static let template = "devices"

    /// A column the list sorts by: its link asks for the other order when it is the active one.
    struct Column: ConsoleView {
        var key: String
        var label: String
        var number: Bool
        var active: Bool
        var order: String
        var arrow: String
        /// Where the column's link leads: this sort, the filter kept.
        var url: String
    }

    struct Row: ConsoleView {
        var id: Int64
        var name: String
        /// The name of the device's user (`users` record), or its ID when it has no name.
        var user: String?
        var role: String
        var lastSeen: String
        var revision: String
        /// How many revisions it lacks; `never synced` for a device that has not begun.
        var behind: String
        var behindTime: String
        var pending: String
        var live: Bool
        var clientVersion: String
        var lastRefusal: Refusal?
        var revoked: Bool
        /// `wipe pending` or `wiped`, for a token revoked with a wipe order.
        var wipe: String?
        var currency: String
        /// `at the latest`, `revision 812, 3 hours ago` or `never`.
        var verified: String
        /// `repaired 3 records 2 hours ago`: its last repair, if any.
        var repaired: String?
        /// `differs, found 5 minutes ago`: found to differ, no proof since.
        var differs: String?
        /// `holds erased data (erasure 3)`: it has not synced since an erasure of values it received.
        var holdsErased: String?
    }

    struct Refusal: ConsoleView {
        var reason: String
        var time: String
    }

    struct RoleOption: ConsoleView {
        var name: String
        var selected: Bool
    }

    /// An option of a filter's select: its value, its label, whether it is chosen.
    struct FilterOption: ConsoleView {
        var value: String
        var label: String
        var selected: Bool
    }

    /// A page of a long list: which rows, and the links to the others.
    struct Paging: ConsoleView {
        var range: String
        var previous: String?
        var next: String?
        var pages: [PageLink]
    }

    struct PageLink: ConsoleView {
        var number: Int
        var url: String
        var current: Bool
    }

    let title = "Devices"
    var chrome: ConsoleChrome?
    let refresh: Int? = 5
    var maxRevision: Int64
    var sortLabel: String
    var columns: [Column]
    var rows: [Row]
    var roles: [RoleOption]
    var hasUsers: Bool
    /// The filter as asked, and what it shows.
    var nameFilter: String
    var roleFilters: [FilterOption]
    var currencyFilters: [FilterOption]
    /// `3 of 49 devices match`, or `49 devices`.
    var shown: String
    var filtered: Bool
    var versionFilters: [FilterOption]
    var paging: Paging?

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Devices</h1>
        <form method="post" action="/admin/devices" class="inline" id="create-token">
          <input type="hidden" name="csrf" value="{{chrome.csrf}}">
          <span class="form-title">New token</span>
          <label>Name <input name="name" id="new-name" required maxlength="200"></label>
          <label>Role <select name="role" id="new-role">{{#roles}}<option{{#selected}} selected{{/selected}}>{{name}}</option>{{/roles}}</select></label>
          {{#hasUsers}}<label>User (record ID) <input name="user" id="new-user" inputmode="numeric" pattern="[0-9]*"></label>{{/hasUsers}}
          <button type="submit" id="create">Create</button>
        </form>
        <form method="get" action="/admin/devices" class="inline" id="filter" role="search">
          <span class="form-title">Filter</span>
          <label>Name <input name="name" id="filter-name" value="{{nameFilter}}" maxlength="200" type="search"></label>
          <label>Role <select name="role" id="filter-role">{{#roleFilters}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/roleFilters}}</select></label>
          <label>Currency <select name="currency" id="filter-currency">{{#currencyFilters}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/currencyFilters}}</select></label>
          <label>Schema version <select name="version" id="filter-version">{{#versionFilters}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/versionFilters}}</select></label>
          <button type="submit" id="apply-filter">Filter</button>
          {{#filtered}}<a class="button secondary" id="clear-filter" href="/admin/devices">Show all</a>{{/filtered}}
        </form>
        <p class="muted" id="shown">{{shown}}{{#paging}}, showing {{range}}{{/paging}}. Revision {{maxRevision}}. Sorted by {{sortLabel}}; click a column to sort.</p>
        {{#paging}}<nav class="pages" id="pages-top" aria-label="Pages">{{#previous}}<a href="{{previous}}" rel="prev" id="previous-page">← Previous</a> {{/previous}}{{#pages}}{{#current}}<span aria-current="page">{{number}}</span>{{/current}}{{^current}}<a href="{{url}}">{{number}}</a>{{/current}} {{/pages}}{{#next}}<a href="{{next}}" rel="next" id="next-page">Next →</a>{{/next}}</nav>{{/paging}}
        <nav class="sort" aria-label="Sort by">Sort by: {{#columns}}<a href="{{url}}"{{#active}} aria-current="true"{{/active}}>{{label}}{{#active}} {{arrow}}{{/active}}</a> {{/columns}}</nav>
        <table id="devices" class="cards">
          <thead><tr>{{#columns}}<th{{#number}} class="number"{{/number}}><a href="{{url}}">{{label}}{{#active}} {{arrow}}{{/active}}</a></th>{{/columns}}<th><span class="hidden">Action</span></th></tr></thead>
          <tbody>
          {{#rows}}
          <tr id="device-{{id}}" data-name="{{name}}" class="{{#revoked}}revoked{{/revoked}} {{currency}}">
            <td data-label="Device" class="name"><a href="/admin/devices/{{id}}">{{name}}</a></td>
            <td data-label="User">{{#user}}{{user}}{{/user}}{{^user}}–{{/user}}</td>
            <td data-label="Role">{{role}}</td>
            <td data-label="Last seen">{{lastSeen}}</td>
            <td data-label="Revision" class="number">{{revision}}</td>
            <td data-label="Behind" class="number behind">{{behind}}{{#holdsErased}} <a class="flag erasure" href="/admin/erasures">{{holdsErased}}</a>{{/holdsErased}}</td>
            <td data-label="For">{{behindTime}}</td>
            <td data-label="Pending" class="number">{{pending}}</td>
            <td data-label="Live" class="live">{{#live}}● live{{/live}}{{^live}}–{{/live}}</td>
            <td data-label="Verified" class="verified">{{verified}}{{#differs}} <span class="flag mismatch">{{differs}}</span>{{/differs}}{{#repaired}} <span class="flag repair">{{repaired}}</span>{{/repaired}}</td>
            <td data-label="Client" class="wrap">{{clientVersion}}</td>
            <td data-label="Last refusal">{{#lastRefusal}}<span class="reason">{{reason}}</span> {{time}}{{/lastRefusal}}{{^lastRefusal}}–{{/lastRefusal}}</td>
            <td data-label="" class="action">{{#revoked}}{{#wipe}}{{wipe}}{{/wipe}}{{^wipe}}revoked{{/wipe}}{{/revoked}}{{^revoked}}<a class="button danger small" href="/admin/devices/{{id}}/revoke">Revoke…</a>{{/revoked}}</td>
          </tr>
          {{/rows}}
          {{^rows}}<tr><td colspan="13" class="muted">No device matches the filter.</td></tr>{{/rows}}
          </tbody>
        </table>
        {{#paging}}<nav class="pages" id="pages-bottom" aria-label="Pages">{{#previous}}<a href="{{previous}}" rel="prev">← Previous</a> {{/previous}}{{#pages}}{{#current}}<span aria-current="page">{{number}}</span>{{/current}}{{^current}}<a href="{{url}}">{{number}}</a>{{/current}} {{/pages}}{{#next}}<a href="{{next}}" rel="next">Next →</a>{{/next}}</nav>{{/paging}}
        {{/content}}{{/layout}}
        """
}
