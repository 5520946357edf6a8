import RevSyncEngine

/// The action cell of a refused change set, on the refusals page and a device's page: `Mark
/// handled` (a form post with the session's CSRF token), or for one handled, who did it and when,
/// and `Reopen`; for a wiped device's, only why nothing is left to handle (the row's `moot`).
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
        {{#moot}}<span class="muted note moot">{{moot}}</span>{{/moot}}{{#handling}}{{#note}}<span class="muted note handled">{{note}}</span>{{/note}}<form method="post" action="/admin/refusals/handled" class="handle">
          <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="device" value="{{device}}">
          <input type="hidden" name="changeSet" value="{{changeSet}}"><input type="hidden" name="handled" value="{{set}}">
          <input type="hidden" name="back" value="{{back}}">
          <button type="submit" class="small{{#note}} secondary{{/note}}">{{button}}</button>
        </form>{{/handling}}
        """

    /// The action for `refusal`, whose page is `back`; `names` are the devices' names by ID.
    /// Why a wiped device's refusal needs no handling (`nil`: the device was not wiped).
    static func moot(_ wiped: Bool) -> String? {
        wiped ? "nothing to handle: the device was wiped, and its edits with it" : nil
    }

    /// The action for `refusal` of a device not wiped (`nil`: wiped, nothing to offer).
    static func handling(
        _ refusal: StoredRefusal, csrf: String, back: String, names: [Int64: String], now: Int64, wiped: Set<Int64>
    ) -> Handling? {
        guard !wiped.contains(refusal.device) else { return nil }
        return handling(refusal, csrf: csrf, back: back, names: names, now: now)
    }

    static func handling(_ refusal: StoredRefusal, csrf: String, back: String, names: [Int64: String], now: Int64) -> Handling {
        let note = refusal.handledAt.map { time in
            refusal.handledBy == refusal.device
                ? "re-applied on the device, \(ConsoleFormat.ago(time, now: now))"
                : "handled by \(refusal.handledBy.map { names[$0] ?? "device \($0)" } ?? "an admin"), \(ConsoleFormat.ago(time, now: now))"
        }
        return Handling(
            csrf: csrf, device: refusal.device, changeSet: refusal.changeSetID, note: note, set: note == nil ? "1" : "0",
            button: note == nil ? "Mark handled" : "Reopen", back: back)
    }
}
