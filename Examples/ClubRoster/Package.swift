// swift-tools-version:6.2
import PackageDescription

// The club's roster app, as the DocC catalog's Getting started article builds it: the app's
// code in ClubRosterKit (the store at launch, the token, the roster's model, syncing around the
// scene's phase, the SwiftUI screen on Apple platforms), a command-line front end that runs it
// against a server, and tests with a store and no server. Depends on the repository by path;
// an app names the repository's URL instead.
let package = Package(
    name: "ClubRoster",
    platforms: [.macOS(.v14), .iOS(.v17)],
    dependencies: [
        .package(name: "RevSync", path: "../..")
    ],
    targets: [
        .target(
            name: "ClubRosterKit",
            dependencies: [.product(name: "RevSyncClient", package: "RevSync")],
            resources: [.copy("Resources/schema.json")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "ClubRoster",
            dependencies: ["ClubRosterKit", .product(name: "RevSyncClient", package: "RevSync")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "ClubRosterKitTests",
            dependencies: ["ClubRosterKit", .product(name: "RevSyncClient", package: "RevSync")],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
