/// A statement of a group checked at its commit (``GroupChecks/atCommit``) failed: the group
/// was rolled back, and nothing of it happened.
struct GroupStatementFailure: Error, CustomStringConvertible {
    var description: String { "a statement of the commit group failed; it was rolled back" }
}
