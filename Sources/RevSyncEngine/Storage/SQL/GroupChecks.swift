/// When the statements of a commit group (``SQLStorageAccess/group(checks:reads:_:)``) are
/// checked.
enum GroupChecks: Sendable {
    /// At the end of each outermost savepoint (a request's change sets): a statement that
    /// fails there fails its savepoint only, and the group goes on.
    case eachSavepoint
    /// Only at the commit: the savepoints' statements go out one after the other without
    /// waiting for their answers (the database works on one while the next is being made). A
    /// failure cannot be told apart from the savepoints after it: the group is rolled back
    /// with ``GroupStatementFailure``, to be run again with ``eachSavepoint``.
    case atCommit
}
