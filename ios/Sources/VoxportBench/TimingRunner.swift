import Foundation
import Synchronization
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

    private struct Log {
        var calls: [Call] = []
        var pass = 0
    }

    public let base: GraphRunner
    private let log = Mutex(Log())

    /// Every call timed so far, in the order they returned.
    public var calls: [Call] { log.withLock { $0.calls } }
    /// The pass the next calls belong to (0 = cold).
    public var pass: Int {
        get { log.withLock { $0.pass } }
        set { log.withLock { $0.pass = newValue } }
    }

    public init(wrapping base: GraphRunner) { self.base = base }

    public var manifest: Manifest { base.manifest }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]
    {
        let start = DispatchTime.now().uptimeNanoseconds
        let out = try await base.run(graph: graph, function: function, inputs: inputs, state: state)
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        log.withLock { $0.calls.append(Call(key: "\(graph).\(function)", milliseconds: ms, pass: $0.pass)) }
        return out
    }

    public func resetState(graph: String, state: String) async throws {
        try await base.resetState(graph: graph, state: state)
    }
    public func close() async { await base.close() }

    /// Total graph time of one pass.
    public func graphMilliseconds(pass: Int) -> Double {
        calls.filter { $0.pass == pass }.reduce(0) { $0 + $1.milliseconds }
    }

    public func callCount(pass: Int) -> Int { calls.filter { $0.pass == pass }.count }

    /// Median ms per graph function over the warm passes (the cold pass when there is none).
    public func warmMedians() -> [String: Double] {
        let calls = self.calls
        let warm = calls.contains { $0.pass > 0 } ? calls.filter { $0.pass > 0 } : calls
        return Dictionary(grouping: warm, by: \.key).mapValues { median($0.map(\.milliseconds)) }
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
