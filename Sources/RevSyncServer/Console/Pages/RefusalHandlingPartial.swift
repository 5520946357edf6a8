import RevSyncEngine

/// The action cell of a refused change set, on the refusals page and a device's page: `Mark
/// handled` (a form post with the session's CSRF token), or for one handled, who did it and when,
/// and `Reopen`.
enum RefusalHandlingPartial {
    static let name = "refusal-handling"

    struct Handling: ConsoleView {
        var csrf: String
        var device: Int64
        var changeSet: String
        /// `handled by dpo, 5 min ago`, when it is.
        var note: String?
        /// What the form sets: `1` (handled) or `0` (reopened).
        var set: String
        var button: String
        /// The page to come back to.
        var back: String
    }

    static let mustache = """
        {{#handling}}{{#note}}<span class="muted note handled">{{note}}</span>{{/note}}<form method="post" action="/admin/refusals/handled" class="handle">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="device" value="{{device}}">
          <input type="hidden" name="changeSet" value="{{changeSet}}"><input type="hidden" name="handled" value="{{set}}">
          <input type="hidden" name="back" value="{{back}}">
          <button type="submit" class="small{{#note}} secondary{{/note}}">{{button}}</button>
        </form>{{/handling}}
        """

    /// The action for `refusal`, whose page is `back`; `names` are the devices' names by ID.
    static func handling(_ refusal: StoredRefusal, csrf: String, back: String, names: [Int64: String], now: Int64) -> Handling {
        let note = refusal.handledAt.map { time in
            "handled by \(refusal.handledBy.map { names[$0] ?? "device \($0)" } ?? "an admin"), \(ConsoleFormat.ago(time, now: now))"
        }
        return Handling(
            csrf: csrf, device: refusal.device, changeSet: refusal.changeSetID, note: note, set: note == nil ? "1" : "0",
            button: note == nil ? "Mark handled" : "Reopen", back: back)
    }
}
