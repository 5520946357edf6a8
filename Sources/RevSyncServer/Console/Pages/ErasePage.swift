/// The confirmation of an erasure: the record's values, what erasing it whole reaches (every
/// record of the cascade with its values, the first ``RecordErasure/reachedLimit``), which
/// attributes (none ticked: the whole record), and why (required); `Erase` posts to `/admin/erase`.
struct ErasePage: ConsolePage {
    static let template = "erase"

    struct AttributeOption: ConsoleView {
        var name: String
        /// Required by the schema: apps may not expect it to be null.
        var required: Bool
    }

    /// A record of the cascade: what happens to it, and its values.
    struct Reached: ConsoleView {
        var title: String
        var url: String
        var summary: String
    }

    let title = "Erase"
    var chrome: ConsoleChrome?
    let refresh: Int? = nil
    var entity: String
    var id: Int64
    var attributes: [AttributeOption]
    var exists: Bool
    var reach: [String]
    /// `name = value`, a line per attribute, as the record is now.
    var values: [String]
    var cascade: [Reached]
    var cascadeNote: String?
    var denial: String?
    var csrf: String
    var back: String

    init(
        chrome: ConsoleChrome, entity: String, id: Int64, attributes: [(name: String, required: Bool)], exists: Bool, reach: [String],
        values: [String], cascade: [Reached], cascadeNote: String?, denial: String?, back: String
    ) {
        self.chrome = chrome
        self.entity = entity
        self.id = id
        self.attributes = attributes.map { AttributeOption(name: $0.name, required: $0.required) }
        self.exists = exists
        self.reach = reach
        self.values = values
        self.cascade = cascade
        self.cascadeNote = cascadeNote
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
          {{#exists}}<section class="record" id="record-values">
            <h2>The record now</h2>
            <ul class="whole">{{#values}}<li>{{.}}</li>{{/values}}</ul>
          </section>{{/exists}}
          <fieldset id="what">
            <legend>What to erase</legend>
            <p class="muted">Tick attributes to erase only them (they become null; apps may not expect null in those marked required). Tick none to erase the whole record:</p>
            <ul class="details" id="reach">{{#reach}}<li>{{.}}</li>{{/reach}}</ul>
            <ul class="found" id="cascade">{{#cascade}}<li><a href="{{url}}">{{title}}</a> <span class="muted">{{summary}}</span></li>{{/cascade}}</ul>
            {{#cascadeNote}}<p class="muted">{{cascadeNote}}</p>{{/cascadeNote}}
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
