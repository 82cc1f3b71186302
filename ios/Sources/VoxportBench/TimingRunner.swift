import Foundation
import VoxportCore
import VoxportRunner

/// Wraps a runner and times every call, so a bench reports each graph function's first call
/// and warm median, and how many runtime calls a second of audio costs.
public final class TimingRunner: GraphRunner {
    public struct Call: Sendable {
        public let key: String  // "graph.function"
        public let milliseconds: Double
        public let pass: Int
    }

    public let base: GraphRunner
    public private(set) var calls: [Call] = []
    /// The pass the next calls belong to (0 = cold).
    public var pass = 0

    public init(wrapping base: GraphRunner) { self.base = base }

    public var manifest: Manifest { base.manifest }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) throws
        -> [String: Tensor]
    {
        let start = DispatchTime.now().uptimeNanoseconds
        let out = try base.run(graph: graph, function: function, inputs: inputs, state: state)
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        calls.append(Call(key: "\(graph).\(function)", milliseconds: ms, pass: pass))
        return out
    }

    public func resetState(graph: String, state: String) throws { try base.resetState(graph: graph, state: state) }
    public func close() { base.close() }

    /// Total graph time of one pass.
    public func graphMilliseconds(pass: Int) -> Double {
        calls.filter { $0.pass == pass }.reduce(0) { $0 + $1.milliseconds }
    }

    public func callCount(pass: Int) -> Int { calls.filter { $0.pass == pass }.count }

    /// Median ms per graph function over the warm passes (the cold pass when there is none).
    public func warmMedians() -> [String: Double] {
        let warm = calls.contains { $0.pass > 0 } ? calls.filter { $0.pass > 0 } : calls
        return Dictionary(grouping: warm, by: \.key).mapValues { median($0.map(\.milliseconds)) }
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
