/// A page asking to confirm an action: its form posts to `action` (with `fields` and the
/// session's CSRF token), or the operator goes `back`.
struct ConfirmPage: ConsolePage {
    static let template = "confirm"

    struct Field: ConsoleView {
        var name: String
        var value: String
    }

    var title: String
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var heading: String
    var question: String
    /// What the action would do, a line each (counts, never a line per record).
    var details: [String]
    var hasDetails: Bool
    var action: String
    var fields: [Field]
    var csrf: String
    var button: String
    var back: String

    init(
        chrome: ConsoleChrome, heading: String, question: String, details: [String] = [], action: String, fields: [String: String] = [:],
        button: String, back: String
    ) {
        title = button
        self.chrome = chrome
        self.heading = heading
        self.question = question
        self.details = details
        hasDetails = !details.isEmpty
        self.action = action
        self.fields = fields.sorted { $0.key < $1.key }.map { Field(name: $0.key, value: $0.value) }
        csrf = chrome.csrf
        self.button = button
        self.back = back
    }

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p>{{question}}</p>
        {{#hasDetails}}<ul class="details" id="details">{{#details}}<li>{{.}}</li>{{/details}}</ul>{{/hasDetails}}
        <form method="post" action="{{action}}" class="actions">
          <input type="hidden" name="csrf" value="{{csrf}}">
          {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
          <button type="submit" class="danger" id="confirm">{{button}}</button>
          <a class="button secondary" id="cancel" href="{{back}}">Cancel</a>
        </form>
        {{/content}}{{/layout}}
        """
}
