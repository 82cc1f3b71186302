// swift-tools-version: 6.0
// VoxportKit: the Swift half of voxport (bundle manifest + verification, host arrays, DSP).
// No package dependencies: everything here builds and tests on Linux as well as Apple platforms.
import PackageDescription

let package = Package(
    name: "VoxportKit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "VoxportCore", targets: ["VoxportCore"]),
        .library(name: "VoxportDSP", targets: ["VoxportDSP"]),
    ],
    targets: [
        .target(name: "VoxportCore"),
        // Pure host math: no dependency on Core (arrays in, arrays out).
        .target(name: "VoxportDSP"),
        // Both test targets read the one fixture folder Python writes (Tests/Fixtures, see
        // README): each target takes its own sources from Tests/ and copies Fixtures/ whole.
        .testTarget(
            name: "VoxportCoreTests",
            dependencies: ["VoxportCore"],
            path: "Tests",
            exclude: ["VoxportDSPTests"],
            sources: ["VoxportCoreTests"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "VoxportDSPTests",
            dependencies: ["VoxportDSP", "VoxportCore"],
            path: "Tests",
            exclude: ["VoxportCoreTests"],
            sources: ["VoxportDSPTests"],
            resources: [.copy("Fixtures")]
        ),
    ]
)
