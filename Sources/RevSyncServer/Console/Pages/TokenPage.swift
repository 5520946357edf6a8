/// A token just created: shown this once, with a copy button.
struct TokenPage: ConsolePage {
    static let template = "token"
    let title = "Token created"
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var name: String
    var role: String
    var token: String

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Token created</h1>
        <p>The token of <strong>{{name}}</strong> ({{role}}). It is shown this once: copy it to the device now.</p>
        <p class="token"><code id="new-token">{{token}}</code> <button type="button" data-copy="new-token" id="copy">Copy</button></p>
        <p><a class="button secondary" href="/admin/devices">Back to the devices</a></p>
        {{/content}}{{/layout}}
        """
}
