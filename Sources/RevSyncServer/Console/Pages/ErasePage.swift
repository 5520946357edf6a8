/// The confirmation of an erasure: what it will reach, which attributes (none ticked: the whole
/// record), and why (required); `Erase` posts to `/admin/erase`.
struct ErasePage: ConsolePage {
    static let template = "erase"

    struct AttributeOption: ConsoleView {
        var name: String
        /// Required by the schema: apps may not expect it to be null.
        var required: Bool
    }

    let title = "Erase"
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var entity: String
    var id: Int64
    var attributes: [AttributeOption]
    var exists: Bool
    var reach: [String]
    var denial: String?
    var csrf: String
    var back: String

    init(
        chrome: ConsoleChrome, entity: String, id: Int64, attributes: [(name: String, required: Bool)], exists: Bool, reach: [String],
        denial: String?,
        back: String
    ) {
        self.chrome = chrome
        self.entity = entity
        self.id = id
        self.attributes = attributes.map { AttributeOption(name: $0.name, required: $0.required) }
        self.exists = exists
        self.reach = reach
        self.denial = denial
        csrf = chrome.csrf
        self.back = back
    }

    static let mustache = """
        {{<layout}}{{$content}}
        <h1>Erase {{entity}} {{id}}?</h1>
        <p>An erasure removes the values from the live tables, every history entry, the change log, stored refusals, snapshots
        and attachments only they used; each device removes them when it next syncs. It is never undone.</p>
        <form method="post" action="/admin/erase" id="erase-form">
          <input type="hidden" name="csrf" value="{{csrf}}">
          <input type="hidden" name="entity" value="{{entity}}">
          <input type="hidden" name="id" value="{{id}}">
          <fieldset id="what">
            <legend>What to erase</legend>
            <p class="muted">Tick attributes to erase only them (they become null; apps may not expect null in those marked required). Tick none to erase the whole record:</p>
            <ul class="details" id="reach">{{#reach}}<li>{{.}}</li>{{/reach}}</ul>
            {{#denial}}<p class="error" id="denial" role="alert">The whole record cannot be erased now: {{denial}}.</p>{{/denial}}
            {{#exists}}<div class="checks">{{#attributes}}<label class="check"><input type="checkbox" name="attributes[]" value="{{name}}"> <span>{{name}}{{#required}} <span class="muted">(required)</span>{{/required}}</span></label> {{/attributes}}</div>{{/exists}}
          </fieldset>
          <label>Reason: the request's reference, not the person's data
            <input name="reason" id="reason" required maxlength="1000" placeholder="GDPR request 2026-41"></label>
          <p class="actions">
            <button type="submit" class="danger" id="confirm">Erase</button>
            <a class="button secondary" id="cancel" href="{{back}}">Cancel</a>
          </p>
        </form>
        {{/content}}{{/layout}}
        """
}
