import Foundation
import VoxportCore
import VoxportRunner

/// The runner `VP_RUNNER` names, over an opened (verified) bundle.
enum RunnerFactory {
    static func make(_ env: BenchEnvironment, bundle: ModelBundle, graphs: [String]?) throws -> GraphRunner {
        switch env.runner {
        case .replay:
            return try ReplayRunner(recording: env.replay!, manifest: bundle.manifest)
        case .worker:
            #if os(Linux) || os(macOS)
                return try WorkerRunner(bundle: bundle.url, graphs: graphs)
            #else
                throw VoxportError(.user, "VP_RUNNER=worker needs a Python child process, which iOS has not: use coreai")
            #endif
        case .coreai:
            #if canImport(CoreAI)
                return try CoreAIRunner(bundle: bundle.url, options: CoreAIRunner.options(units: env.units))
            #else
                throw VoxportError(
                    .user,
                    "VP_RUNNER=coreai needs Apple's Core AI framework (an iOS or macOS device with Core AI); "
                        + "here, use VP_RUNNER=worker")
            #endif
        }
    }
}
