import Foundation
import VoxportCore
import VoxportRunner

/// The runner `VP_RUNNER` names, over an opened (verified) bundle.
enum RunnerFactory {
    static func make(_ env: BenchEnvironment, bundle: ModelBundle, graphs: [String]?) async throws -> GraphRunner {
        switch env.runner {
        case .replay:
            return try ReplayRunner(recording: env.replay!, manifest: bundle.manifest)
        case .worker:
            #if os(Linux) || os(macOS)
                return try await WorkerRunner(bundle: bundle.url, graphs: graphs)
            #else
                throw VoxportError(.user, "VP_RUNNER=worker needs a Python child process, which iOS has not: use coreai")
            #endif
        case .coreai:
            #if canImport(CoreAI)
                guard #available(macOS 27.0, iOS 27.0, *) else {
                    throw VoxportError(.user, "VP_RUNNER=coreai needs Core AI: macOS 27 or iOS 27 and later")
                }
                return try CoreAIRunner(bundle: bundle.url, options: CoreAIRunner.options(units: env.units))
            #else
                // The iOS simulator and SDKs before 27 have no CoreAI module: this build has no
                // Core AI at all, whatever the device it runs on.
                throw VoxportError(
                    .user,
                    "VP_RUNNER=coreai: this build has no Core AI (the iOS simulator and SDKs before 27 lack it): "
                        + "run on a device with iOS or macOS 27, or use VP_RUNNER=worker")
            #endif
        }
    }

    /// What ran the graphs, for result.json's `runtime`: for `coreai`, Apple's framework on a
    /// device or the package's CoreAI mirror over the Linux runtime (Package.swift declares the
    /// mirror on Linux only, so the platform says which).
    static func runtime(_ kind: BenchEnvironment.RunnerKind) -> String {
        switch kind {
        case .worker: return "voxport-serve (the Core AI Python runtime in a child process)"
        case .replay: return "replay (recorded answers, no runtime)"
        case .coreai:
            #if os(Linux)
                return "coreai-mirror (VoxportKit's CoreAI module over the Linux Core AI runtime, voxport serve --assets)"
            #else
                return "apple-coreai (Apple's Core AI framework)"
            #endif
        }
    }
}
