import Foundation
import Synchronization
import VoxportCore

/// Passes every call to the runner below and times it: the one timing wrapper of the package.
///
/// Hosts read `graphNanoseconds` before and after a chunk (its host time is its wall time
/// minus the graph calls); the Chatterbox bench reads the time and calls per `graph.function`
/// since its last `resetTotals()`; the bench driver, made with `keepingCalls`, reads every call
/// with the pass it belongs to (first call, warm medians, calls per pass). Without
/// `keepingCalls` memory stays flat however long a host speaks.
public final class TimedRunner: GraphRunner {
    public struct Call: Sendable {
        public let key: String  // "graph.function"
        public let milliseconds: Double
        public let pass: Int
    }

    private struct Log {
        var graphNanoseconds: UInt64 = 0
        var nanoseconds: [String: UInt64] = [:]
        var counts: [String: Int] = [:]
        var calls: [Call] = []
        var pass = 0
    }

    public let base: GraphRunner
    public let keepsCalls: Bool
    private let log = Mutex(Log())

    public init(wrapping base: GraphRunner, keepingCalls: Bool = false) {
        self.base = base
        keepsCalls = keepingCalls
    }

    public var manifest: Manifest { base.manifest }

    /// Graph time since this runner was made (never reset: read it before and after).
    public var graphNanoseconds: UInt64 { log.withLock { $0.graphNanoseconds } }
    /// Time per "graph.function" since the last `resetTotals()`.
    public var nanosecondsByFunction: [String: UInt64] { log.withLock { $0.nanoseconds } }
    /// Calls per "graph.function" since the last `resetTotals()`.
    public var callsByFunction: [String: Int] { log.withLock { $0.counts } }
    /// Every call so far, in the order they returned (empty unless `keepingCalls`).
    public var calls: [Call] { log.withLock { $0.calls } }
    /// The pass the next calls belong to (0 = cold).
    public var pass: Int {
        get { log.withLock { $0.pass } }
        set { log.withLock { $0.pass = newValue } }
    }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]
    {
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            let key = "\(graph).\(function)"
            log.withLock {
                $0.graphNanoseconds += elapsed
                $0.nanoseconds[key, default: 0] += elapsed
                $0.counts[key, default: 0] += 1
                if keepsCalls { $0.calls.append(Call(key: key, milliseconds: Double(elapsed) / 1e6, pass: $0.pass)) }
            }
        }
        return try await base.run(graph: graph, function: function, inputs: inputs, state: state)
    }

    public func resetState(graph: String, state: String) async throws {
        try await base.resetState(graph: graph, state: state)
    }
    public func close() async { await base.close() }

    /// Zero the per-function time and calls (one bench stage's figures start here).
    public func resetTotals() {
        log.withLock {
            $0.nanoseconds = [:]
            $0.counts = [:]
        }
    }

    /// ms of every function whose key passes `match` since `resetTotals()`.
    public func milliseconds(_ match: (String) -> Bool) -> Double {
        Double(nanosecondsByFunction.filter { match($0.key) }.values.reduce(0, +)) / 1e6
    }

    /// Calls of every function whose key passes `match` since `resetTotals()`.
    public func count(_ match: (String) -> Bool) -> Int { callsByFunction.filter { match($0.key) }.values.reduce(0, +) }

    /// ms of one graph's functions since `resetTotals()`.
    public func graphMilliseconds(_ graph: String) -> Double { milliseconds { $0.hasPrefix(graph + ".") } }
    /// ms of every call since `resetTotals()`.
    public var totalMilliseconds: Double { milliseconds { _ in true } }

    /// Total graph time of one pass (`keepingCalls`).
    public func graphMilliseconds(pass: Int) -> Double {
        calls.filter { $0.pass == pass }.reduce(0) { $0 + $1.milliseconds }
    }

    /// Calls in one pass (`keepingCalls`).
    public func callCount(pass: Int) -> Int { calls.filter { $0.pass == pass }.count }

    /// Median ms per graph function over the warm passes (the cold pass when there is none).
    public func warmMedians() -> [String: Double] {
        let calls = self.calls
        let warm = calls.contains { $0.pass > 0 } ? calls.filter { $0.pass > 0 } : calls
        return Dictionary(grouping: warm, by: \.key).mapValues { median($0.map(\.milliseconds)) }
    }
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
public func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let s = values.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
