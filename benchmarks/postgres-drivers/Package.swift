// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "pgnio-bench",
    platforms: [.macOS(.v14)],
    dependencies: [.package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2")],
    targets: [
        .executableTarget(name: "pgnio-bench", dependencies: [.product(name: "PostgresNIO", package: "postgres-nio")]),
        .systemLibrary(name: "CPostgres", path: "Sources/CPostgres", pkgConfig: "libpq"),
        .executableTarget(name: "libpq-bench", dependencies: ["CPostgres"]),
    ]
)
