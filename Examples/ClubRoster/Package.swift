// swift-tools-version:6.2
import PackageDescription

// The club's roster app, on the command line: plain GRDB code with generated types on a
// RevSync device store. Depends on the repository by path.
let package = Package(
    name: "ClubRoster",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [
        .package(name: "RevSync", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "ClubRoster",
            dependencies: [.product(name: "RevSyncClient", package: "RevSync")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        )
    ]
)
