import VoxportCore
import VoxportRunner

/// The runner of a bench that loads no graphs (`chatterbox.text`, `audio8.text`): no worker, no
/// device load, only the bundle's manifest for the host types that read it. A graph call
/// through it is a bench's bug, refused by name.
final class GraphlessRunner: GraphRunner {
    let manifest: Manifest
    let bench: String

    init(manifest: Manifest, bench: String) {
        self.manifest = manifest
        self.bench = bench
    }

    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        throw VoxportError(.io, "\(bench) loads no graphs, yet called \(graph).\(function)")
    }

    func resetState(graph: String, state: String) async throws {
        throw VoxportError(.io, "\(bench) loads no graphs, yet reset \(graph)'s state")
    }

    func close() async {}
}
