/// Moves a value into a child task that alone uses it.
public struct UncheckedBox<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
