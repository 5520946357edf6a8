// SwiftUI does not exist on Linux, where CI runs: the few declarations the articles' SwiftUI
// snippets use, with SwiftUI's shapes, so that the rest of each snippet (RevSync's and GRDB's
// API, Observation) is type-checked for real. On Apple platforms the real SwiftUI is used and
// this file is left out (scripts/docc-snippets).
import Foundation

@MainActor protocol View {
    associatedtype Body: View
    @ViewBuilder var body: Body { get }
}

extension Never: View {
    var body: Never { fatalError() }
}

@resultBuilder enum ViewBuilder {
    static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    static func buildExpression<Content: View>(_ content: Content) -> Content { content }
    static func buildEither<TrueContent: View, FalseContent: View>(first: TrueContent) -> ConditionalContent<TrueContent, FalseContent> {
        ConditionalContent()
    }
    static func buildEither<TrueContent: View, FalseContent: View>(second: FalseContent) -> ConditionalContent<TrueContent, FalseContent> {
        ConditionalContent()
    }
}

/// What an `if`/`else` in a view builder makes (SwiftUI's `_ConditionalContent`).
struct ConditionalContent<TrueContent: View, FalseContent: View>: View {
    var body: Never { fatalError() }
}

struct Group<Content: View>: View {
    init(@ViewBuilder content: () -> Content) {}
    var body: Never { fatalError() }
}

struct Text: View {
    init(_ text: String) {}
    var body: Never { fatalError() }
}

struct List<Content: View>: View {
    init<Data: RandomAccessCollection>(_ data: Data, @ViewBuilder rowContent: @escaping (Data.Element) -> Content)
    where Data.Element: Identifiable {}
    var body: Never { fatalError() }
}

extension View {
    func task(priority: TaskPriority = .userInitiated, _ action: @escaping @Sendable () async -> Void) -> some View { self }
    func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some View { self }
}

@propertyWrapper struct State<Value> {
    init(wrappedValue: Value) {}
    var wrappedValue: Value {
        get { fatalError() }
        nonmutating set {}
    }
}

@propertyWrapper struct Environment<Value> {
    init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    var wrappedValue: Value { fatalError() }
}

struct EnvironmentValues {
    var scenePhase: ScenePhase
}

enum ScenePhase: Equatable, Sendable {
    case active, inactive, background
}
