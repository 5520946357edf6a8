/// A page with one message: what was done, or why not, and where to go back.
struct MessagePage: ConsolePage {
    static let template = "message"

    enum Kind: String, Sendable {
        case success, error
    }

    var title: String
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var heading: String
    var kind: String
    var text: String
    var back: String
    var backLabel: String

    init(chrome: ConsoleChrome?, heading: String, kind: Kind, text: String, back: String, backLabel: String = "Back") {
        title = heading
        self.chrome = chrome
        self.heading = heading
        self.kind = kind.rawValue
        self.text = text
        self.back = back
        self.backLabel = backLabel
    }

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>{{heading}}</h1>
        <p class="{{kind}}" id="message" role="status">{{text}}</p>
        <p><a class="button secondary" id="back" href="{{back}}">{{backLabel}}</a></p>
        {{/content}}{{/layout}}
        """
}
