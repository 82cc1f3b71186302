import Foundation
import VoxportCore
import VoxportRunner

/// `core.calls`: the cost of one runtime call, whichever runner makes it — on the toolkit's
/// self-test bundle (`voxport export core`), each pass calls `mlp.main` ([8, 256] float32 in and
/// out) and `decoder.decode` (two one-element int32 inputs, the KV state carried by the runner)
/// once, with fixed inputs. Run it with `VP_PASSES=300` under two `VP_RUNNER`s and read
/// `warm_median_ms`: the difference is one runner's overhead over the other's on the same graph.
public final class CoreCallsBench: BenchCase {
    public static let name = "core.calls"
    public static let model = "core"
    public static let graphs: [String]? = ["mlp", "decoder"]

    let runner: GraphRunner
    let x: Tensor

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        for (graph, function) in [("mlp", "main"), ("decoder", "decode")] {
            _ = try bundle.manifest.function(graph: graph, function: function)
        }
        self.runner = runner
        x = Tensor(shape: [8, 256], storage: .float32((0..<(8 * 256)).map { Float(sin(Double($0))) }))
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        _ = try await runner.run(graph: "mlp", function: "main", inputs: ["x": x])
        // The cache holds 32 positions: the position wraps, the call's cost does not change.
        let feed: [String: Tensor] = [
            "tokens": Tensor(shape: [1, 1], storage: .int32([1])),
            "start": Tensor(shape: [1], storage: .int32([Int32(8 + index % 24)])),
        ]
        _ = try await runner.run(graph: "decoder", function: "decode", inputs: feed)
        return BenchPass(audioSeconds: 0)
    }
}
