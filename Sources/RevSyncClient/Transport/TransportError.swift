/// A request that got no response.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// A failure described by `description`.
    public init(_ description: String) { self.description = description }
}
