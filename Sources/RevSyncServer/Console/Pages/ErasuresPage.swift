/// The erasures, newest first, each with its receipt: how many devices removed the values, and
/// which still hold them (the devices page flags them too).
struct ErasuresPage: ConsolePage {
    static let template = "erasures"

    struct Holder: ConsoleView {
        var id: Int64
        var name: String
    }

    struct Row: ConsoleView {
        var id: Int64
        var revision: Int64
        var time: String
        var who: String
        /// `players 12: date_of_birth`, or `players 12 and 3 cascaded`.
        var record: String
        var reason: String
        /// `2 of 3`.
        var progress: String
        var complete: Bool
        var holding: [Holder]
    }

    let title = "Erasures"
    var chrome: ConsoleChrome?
    let refresh: Int? = 30
    var erasures: [Row]

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Erasures</h1>
        <p class="muted">Each erasure is complete once every device has synced since (a device that never received the values counts as erased).
        Erase a record from its <a href="/admin/history">history</a>.</p>
        <table id="erasures" class="cards">
          <thead><tr><th>Erasure</th><th>When</th><th>Who</th><th>Record</th><th>Reason</th><th>Devices erased</th><th>Still holding</th></tr></thead>
          <tbody>
          {{#erasures}}
          <tr id="erasure-{{id}}" class="{{#complete}}current{{/complete}}{{^complete}}behind{{/complete}}">
            <td data-label="Erasure">#{{id}} (revision {{revision}})</td>
            <td data-label="When">{{time}}</td>
            <td data-label="Who" class="wrap">{{who}}</td>
            <td data-label="Record" class="wrap">{{record}}</td>
            <td data-label="Reason" class="wrap">{{reason}}</td>
            <td data-label="Devices erased" class="progress">{{progress}}{{#complete}} · complete{{/complete}}</td>
            <td data-label="Still holding" class="wrap holding">{{#holding}}<a href="/admin/devices/{{id}}">{{name}}</a> {{/holding}}{{^holding}}–{{/holding}}</td>
          </tr>
          {{/erasures}}
          {{^erasures}}<tr><td colspan="7" class="muted">No erasure yet.</td></tr>{{/erasures}}
          </tbody>
        </table>
        {{/content}}{{/layout}}
        """
}
