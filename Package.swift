// swift-tools-version:6.2
import PackageDescription

/// Settings applied to every target: strict, explicit, Swift 6 language mode.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "RevSync",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "RevSyncProtocol", targets: ["RevSyncProtocol"]),
        .library(name: "RevSyncEngine", targets: ["RevSyncEngine"]),
        .library(name: "RevSyncServer", targets: ["RevSyncServer"]),
        .executable(name: "revsync-server", targets: ["revsync-server"]),
        .library(name: "RevSyncClient", targets: ["RevSyncClient"]),
        .executable(name: "revsync", targets: ["revsync"]),
        .executable(name: "revsync-bench", targets: ["revsync-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // `swift package generate-documentation --target RevSyncClient`: the client's DocC, built in CI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(
            name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .target(
            name: "RevSyncProtocol",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .plugin(name: "GitRevision", capability: .buildTool()),
        .plugin(name: "OpenAPIDocument", capability: .buildTool()),
        .target(
            name: "RevSyncVersion",
            dependencies: ["RevSyncProtocol"],
            swiftSettings: swiftSettings,
            plugins: ["GitRevision"]
        ),
        .target(
            name: "RevSyncSQLite",
            dependencies: [
                "RevSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The core of the server: the sync engine, storage (both drivers), tokens, seeding and
        // snapshots. No HTTP, NIO, templates or metrics: the web layer below depends on it, never
        // the other way round.
        .target(
            name: "RevSyncEngine",
            dependencies: [
                "RevSyncProtocol",
                "RevSyncSQLite",
                "CPostgres",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP face of the engine: endpoints, the console, live streams, metrics, logging.
        .target(
            name: "RevSyncServer",
            dependencies: [
                "RevSyncProtocol",
                "RevSyncEngine",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: swiftSettings,
            plugins: ["OpenAPIDocument"]
        ),
        .executableTarget(
            name: "revsync-server",
            dependencies: [
                "RevSyncServer", "RevSyncEngine", "RevSyncSQLite", "RevSyncVersion", "CMalloc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RevSyncClient",
            dependencies: [
                "RevSyncProtocol",
                "RevSyncSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The demo schema's Swift types, as `revsync generate swift` writes them: for the
        // tests and benchmarks of the typed API (a test keeps the file current).
        .target(
            name: "RevSyncDemoRecords",
            dependencies: ["RevSyncClient", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "revsync",
            dependencies: [
                "RevSyncClient", "RevSyncVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RevSyncSimulation",
            dependencies: [
                "RevSyncClient", "RevSyncEngine", "RevSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RevSyncBenchmarks",
            dependencies: [
                "RevSyncSimulation", "RevSyncClient", "RevSyncDemoRecords", "RevSyncEngine", "RevSyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "revsync-bench",
            dependencies: [
                "RevSyncBenchmarks", "RevSyncSimulation", "RevSyncClient", "RevSyncEngine", "RevSyncProtocol",
                "RevSyncVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test harness, not products: the engine over real databases, devices, raw HTTP, child
        // processes, private PostgreSQL clusters (RevSyncTestSupport); a live server on an
        // ephemeral port (RevSyncServerTestSupport).
        .target(
            name: "RevSyncTestSupport",
            dependencies: [
                "RevSyncEngine", "RevSyncProtocol", "RevSyncSQLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RevSyncTestSupport",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RevSyncServerTestSupport",
            dependencies: [
                "RevSyncServer", "RevSyncEngine", "RevSyncProtocol", "RevSyncTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/RevSyncServerTestSupport",
            swiftSettings: swiftSettings
        ),
        // Swift types generated from a schema of hostile names (keywords, names the file uses,
        // self-references): compiled with the tests, so generated code that stops compiling
        // fails the build (a test keeps the file current).
        .target(
            name: "RevSyncGeneratedFixtures",
            dependencies: ["RevSyncClient", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/RevSyncGeneratedFixtures",
            exclude: ["hostile-names.json"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RevSyncProtocolTests",
            dependencies: ["RevSyncProtocol", "RevSyncTestSupport"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        // What the engine decides, over real databases, without HTTP: the engine alone.
        .testTarget(
            name: "RevSyncEngineTests",
            dependencies: ["RevSyncEngine", "RevSyncProtocol", "RevSyncTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RevSyncServerTests",
            dependencies: ["RevSyncServer", "RevSyncEngine", "RevSyncProtocol", "RevSyncTestSupport", "RevSyncServerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RevSyncSimulationTests",
            dependencies: [
                "RevSyncSimulation", "RevSyncClient", "RevSyncEngine", "RevSyncTestSupport", "RevSyncServerTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RevSyncBenchmarkTests",
            dependencies: ["RevSyncBenchmarks", "RevSyncSimulation", "RevSyncEngine", "RevSyncTestSupport", "RevSyncServerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RevSyncClientTests",
            dependencies: [
                "RevSyncClient", "RevSyncServer", "RevSyncEngine", "RevSyncProtocol", "RevSyncSQLite", "RevSyncTestSupport",
                "RevSyncServerTestSupport", "RevSyncDemoRecords", "RevSyncGeneratedFixtures",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
