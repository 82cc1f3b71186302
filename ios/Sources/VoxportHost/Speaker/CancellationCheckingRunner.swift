import VoxportCore
import VoxportRunner

/// A runner that refuses to start a graph call once its task is cancelled, so a Speaker whose
/// consumer went away stops between graph calls (inside a piece too: Chatterbox's T3 decode and
/// Audio8's frame loop make dozens of calls a piece) without the pipelines knowing about it.
final class CancellationCheckingRunner: GraphRunner {
    let base: any GraphRunner

    init(wrapping base: any GraphRunner) { self.base = base }

    var manifest: Manifest { base.manifest }

    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        try Task.checkCancellation()
        return try await base.run(graph: graph, function: function, inputs: inputs, state: state)
    }

    func resetState(graph: String, state: String) async throws {
        try Task.checkCancellation()
        try await base.resetState(graph: graph, state: state)
    }

    /// The runner belongs to whoever made it: a Speaker never closes it.
    func close() async {}
}
