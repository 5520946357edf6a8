/// The body of every refused request, from every endpoint: `{"error": {"code", "message",
/// "path"}}` (`docs/protocol.md` section 1, `docs/openapi.json`'s `Error`). The server writes it
/// with its streaming writer; clients read it with this type.
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// The error itself.
    public var error: Detail

    /// What went wrong.
    public struct Detail: Codable, Sendable, Equatable {
        /// What went wrong, for programs (`invalid_id`, `later_changes`, `forbidden`, ...).
        public var code: String
        /// What went wrong, for people.
        public var message: String
        /// The JSON path of an error in a request body.
        public var path: String?
    }
}
