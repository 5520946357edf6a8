// swift-tools-version:6.2
// The fuzz targets, a package of their own: they are built with -sanitize=fuzzer (by
// scripts/fuzz), which the main package's executables cannot be.
import PackageDescription

let package = Package(
    name: "RevSyncFuzz",
    dependencies: [.package(name: "RevSync", path: "..")],
    targets: [
        .executableTarget(
            name: "RevSyncDecoderFuzzer",
            dependencies: [.product(name: "RevSyncProtocol", package: "RevSync")],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    ]
)
