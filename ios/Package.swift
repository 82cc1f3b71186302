// swift-tools-version: 6.0
// VoxportKit: the Swift half of voxport (bundle manifest + verification, host arrays, DSP).
// No package dependencies: everything here builds and tests on Linux as well as Apple platforms.
import PackageDescription

// Core AI's Swift API is Apple's (macOS / iOS 27). Where it is absent — Linux, where this package
// is built and tested — the package's own `CoreAI` module stands in: Apple's surface, declared from
// its documentation, running on the Linux Core AI runtime through `voxport serve --assets`
// (Sources/CoreAI/README.md). It is declared on Linux only, so on a Mac or an iPhone
// `import CoreAI` is always Apple's framework, never this one.
#if os(Linux)
    let coreAIMirror: [Target] = [
        .target(
            name: "CoreAI", dependencies: ["VoxportCore", "VoxportWorker"], exclude: ["README.md"],
            // Apple's non-escapable views need lifetime annotations, still an experimental feature.
            swiftSettings: [.enableExperimentalFeature("Lifetimes")]),
        .testTarget(name: "CoreAIMirrorTests", dependencies: ["CoreAI", "VoxportCore"], path: "Tests/CoreAIMirrorTests"),
    ]
    let coreAI: [Target.Dependency] = ["CoreAI"]
#else
    let coreAIMirror: [Target] = []
    let coreAI: [Target.Dependency] = []
#endif

let package = Package(
    name: "VoxportKit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "VoxportCore", targets: ["VoxportCore"]),
        .library(name: "VoxportDSP", targets: ["VoxportDSP"]),
        .library(name: "VoxportWorker", targets: ["VoxportWorker"]),
        .library(name: "VoxportRunner", targets: ["VoxportRunner"]),
        .library(name: "VoxportHost", targets: ["VoxportHost"]),
        .library(name: "VoxportText", targets: ["VoxportText"]),
        .library(name: "VoxportBench", targets: ["VoxportBench"]),
        .executable(name: "voxport-bench", targets: ["voxport-bench"]),
    ],
    targets: [
        .target(name: "VoxportCore"),
        // Pure host math: no dependency on Core (arrays in, arrays out).
        .target(name: "VoxportDSP"),
        // The `voxport serve` child and its frames (docs/worker-protocol.md), awaited without
        // blocking a thread: what WorkerRunner and the CoreAI mirror both speak.
        .target(name: "VoxportWorker", dependencies: ["VoxportCore"]),
        // GraphRunner and its runners (Core AI on device, a `voxport serve` worker, replay).
        .target(name: "VoxportRunner", dependencies: ["VoxportCore", "VoxportWorker"] + coreAI),
        // Text -> token ids: the publishers' tokenizer.json files run exactly (one BPE engine over
        // id pairs) and the models' text front ends. Foundation only.
        .target(name: "VoxportText"),
        // One host per model over a GraphRunner, and the Speaker API over all three (text through
        // VoxportText's front ends).
        .target(name: "VoxportHost", dependencies: ["VoxportCore", "VoxportDSP", "VoxportRunner", "VoxportText"]),
        // The on-device bench (VP_* environment variables), a library so the tests and the app
        // shell drive the same code the `voxport-bench` executable does.
        .target(name: "VoxportBench", dependencies: ["VoxportHost", "VoxportRunner", "VoxportCore"]),
        .executableTarget(name: "voxport-bench", dependencies: ["VoxportBench", "VoxportCore"]),
        // What the test targets share (only test targets depend on it): async assertions,
        // scratch folders, the Python child, and the one fixture folder Python writes
        // (Tests/Fixtures, see README), copied here once and read through `FixtureFolder`.
        // The test targets below take their own sources from Tests/.
        .target(
            name: "VoxportTestSupport",
            dependencies: ["VoxportCore"],
            path: "Tests",
            exclude: ["VoxportCoreTests", "VoxportDSPTests", "VoxportHostTests", "VoxportRunnerTests", "VoxportEndToEndTests", "VoxportTextTests", "CoreAIMirrorTests"],
            sources: ["VoxportTestSupport"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "VoxportCoreTests",
            dependencies: ["VoxportCore", "VoxportTestSupport"],
            path: "Tests",
            exclude: ["VoxportDSPTests", "VoxportHostTests", "VoxportRunnerTests", "VoxportEndToEndTests", "VoxportTextTests", "CoreAIMirrorTests", "VoxportTestSupport", "Fixtures"],
            sources: ["VoxportCoreTests"]
        ),
        .testTarget(
            name: "VoxportDSPTests",
            dependencies: ["VoxportDSP", "VoxportCore", "VoxportTestSupport"],
            path: "Tests",
            exclude: ["VoxportCoreTests", "VoxportHostTests", "VoxportRunnerTests", "VoxportEndToEndTests", "VoxportTextTests", "CoreAIMirrorTests", "VoxportTestSupport", "Fixtures"],
            sources: ["VoxportDSPTests"]
        ),
        .testTarget(
            name: "VoxportHostTests",
            dependencies: ["VoxportHost", "VoxportText", "VoxportRunner", "VoxportCore", "VoxportTestSupport"],
            path: "Tests",
            exclude: ["VoxportCoreTests", "VoxportDSPTests", "VoxportRunnerTests", "VoxportEndToEndTests", "VoxportTextTests", "CoreAIMirrorTests", "VoxportTestSupport", "Fixtures"],
            sources: ["VoxportHostTests"]
        ),
        .testTarget(
            name: "VoxportTextTests",
            dependencies: ["VoxportText", "VoxportCore", "VoxportTestSupport"],
            path: "Tests",
            exclude: ["VoxportCoreTests", "VoxportDSPTests", "VoxportHostTests", "VoxportRunnerTests", "VoxportEndToEndTests", "CoreAIMirrorTests", "VoxportTestSupport", "Fixtures"],
            sources: ["VoxportTextTests"]
        ),
        // WorkerRunner through the real runtime (`voxport serve` from the repo's .venv, which the
        // tests need: they fail, naming the fix, without it), ReplayRunner, frames. The Python
        // helpers beside the tests make the bundle and the Session's reference answers.
        .testTarget(
            name: "VoxportRunnerTests",
            dependencies: ["VoxportRunner", "VoxportCore", "VoxportTestSupport"] + coreAI,
            path: "Tests/VoxportRunnerTests",
            exclude: ["make_recording.py", "fake_worker.py"]
        ),
        // Whole hosts and the bench through a real worker (`voxport serve`) on the reduced
        // bundles, against the Python pipeline on the same bundle and draws; the script beside
        // the tests makes (or reuses) the bundle and the Python side's answers.
        .testTarget(
            name: "VoxportEndToEndTests",
            dependencies: ["VoxportBench", "VoxportHost", "VoxportText", "VoxportRunner", "VoxportCore", "VoxportTestSupport"] + coreAI,
            path: "Tests/VoxportEndToEndTests",
            exclude: ["kokoro_case.py", "kokoro_text_case.py", "chatterbox_case.py", "audio8_case.py", "coreai_parity_case.py", "text_bench_case.py", "chatterbox_turbo_case.py", "s3gen_case.py", "case_stdout.py"]
        ),
    ] + coreAIMirror
)
