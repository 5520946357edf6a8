/// Who wrote a message; it decides which keys are allowed and which rules apply.
public enum MessageSender: Sendable {
    /// A request from a device: temporary IDs in `create`, base revisions required,
    /// server-only keys refused.
    case client
    /// A response from the server: permanent IDs, `revision`, `conflict`, `__oldId__`, ...;
    /// keys this version does not know are skipped, so servers can add some.
    case server
}
