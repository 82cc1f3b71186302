import Foundation
import Synchronization
import VoxportCore

/// A GraphRunner that answers from a recording and fails when a call differs from it.
///
/// A recording is the sequence of calls a host made (graph, function, state key, inputs) and
/// what the runtime answered. Replaying checks each call in order against its step: the same
/// graph, function and state key, the same input names and shapes, integer and bool inputs
/// exactly equal (int32 and int64 compare by value), float inputs within the step's `tolerance`
/// (largest absolute difference; NaN matches NaN only). Then it returns the recorded outputs.
/// So a host's control flow (tokens chosen, frames fed back) is tested against the Python
/// pipeline with no runtime at all. `resetState` is accepted at any point and not checked: a
/// recording's state is implicit in its outputs.
///
/// On disk (`ReplayRunner(recording:)`): a folder with `recording.json`
///
///     {"format": "voxport-replay/1",
///      "steps": [{"graph": "decoder", "function": "prefill", "state": "default",
///                 "inputs": "000-inputs.npz", "outputs": "000-outputs.npz", "tolerance": 0.0}, ...]}
///
/// (npz paths relative to the folder, written with `np.savez`; `state` defaults to "default",
/// `tolerance` to 0) and the bundle's `manifest.json` beside it unless a manifest is given.
public final class ReplayRunner: GraphRunner {
    public static let format = "voxport-replay/1"

    public struct Step: Sendable {
        public var graph: String
        public var function: String
        public var state: String
        public var inputs: [String: Tensor]
        public var outputs: [String: Tensor]
        /// Largest absolute difference allowed on a float input of this step.
        public var tolerance: Double

        public init(
            graph: String, function: String, state: String = "default", inputs: [String: Tensor],
            outputs: [String: Tensor], tolerance: Double = 0
        ) {
            self.graph = graph
            self.function = function
            self.state = state
            self.inputs = inputs
            self.outputs = outputs
            self.tolerance = tolerance
        }
    }

    public let manifest: Manifest
    public let steps: [Step]
    private struct Progress {
        var position = 0
        var closed = false
    }
    private let progress = Mutex(Progress())

    /// How many steps have been replayed.
    public var position: Int { progress.withLock { $0.position } }

    public init(manifest: Manifest, steps: [Step]) {
        self.manifest = manifest
        self.steps = steps
    }

    /// Load a recording folder (see the type's documentation).
    public convenience init(recording: URL, manifest: Manifest? = nil) throws {
        let index = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: recording.appendingPathComponent("recording.json")))
        guard index["format"]?.stringValue == ReplayRunner.format, let list = index["steps"]?.arrayValue else {
            throw RunnerError(.user, "\(recording.path)/recording.json is not a \(ReplayRunner.format) recording")
        }
        let steps: [Step] = try list.enumerated().map { i, s in
            guard let graph = s["graph"]?.stringValue, let function = s["function"]?.stringValue,
                let inputs = s["inputs"]?.stringValue, let outputs = s["outputs"]?.stringValue
            else { throw RunnerError(.user, "\(recording.path)/recording.json: step \(i) needs graph, function, inputs, outputs") }
            return Step(
                graph: graph, function: function, state: s["state"]?.stringValue ?? "default",
                inputs: try NpzArchive.load(recording.appendingPathComponent(inputs)).arrays,
                outputs: try NpzArchive.load(recording.appendingPathComponent(outputs)).arrays,
                tolerance: s["tolerance"]?.doubleValue ?? 0)
        }
        let m = try manifest ?? Manifest.decode(Data(contentsOf: recording.appendingPathComponent(Manifest.fileName)))
        self.init(manifest: m, steps: steps)
    }

    /// Steps not replayed yet (a host that stops early leaves some).
    public var remaining: Int { steps.count - position }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]
    {
        try progress.withLock { try replay(&$0, graph: graph, function: function, inputs: inputs, state: state) }
    }

    private func replay(_ progress: inout Progress, graph: String, function: String, inputs: [String: Tensor], state: String)
        throws -> [String: Tensor]
    {
        guard !progress.closed else { throw RunnerError(.closed, "this ReplayRunner is closed") }
        let position = progress.position
        let call = "call \(position + 1) (\(graph).\(function))"
        guard position < steps.count else {
            throw RunnerError(.replayMismatch, "\(call): the recording has only \(steps.count) calls")
        }
        let step = steps[position]
        guard step.graph == graph, step.function == function, step.state == state else {
            throw RunnerError(
                .replayMismatch,
                "\(call): the recording has \(step.graph).\(step.function) (state '\(step.state)') here, "
                    + "not \(graph).\(function) (state '\(state)')")
        }
        guard Set(step.inputs.keys) == Set(inputs.keys) else {
            throw RunnerError(
                .replayMismatch, "\(call): inputs \(inputs.keys.sorted()), the recording has \(step.inputs.keys.sorted())")
        }
        for name in step.inputs.keys.sorted() {
            if let why = ReplayRunner.difference(step.inputs[name]!, inputs[name]!, tolerance: step.tolerance) {
                throw RunnerError(.replayMismatch, "\(call): input '\(name)' differs from the recording: \(why)")
            }
        }
        progress.position += 1
        return step.outputs
    }

    public func resetState(graph: String, state: String) async throws {
        guard !progress.withLock({ $0.closed }) else { throw RunnerError(.closed, "this ReplayRunner is closed") }
    }

    public func close() async { progress.withLock { $0.closed = true } }

    /// Why `got` is not `want` (nil when it matches): shapes, kinds, then values.
    static func difference(_ want: Tensor, _ got: Tensor, tolerance: Double) -> String? {
        guard want.shape == got.shape else { return "shape \(got.shape), recorded \(want.shape)" }
        if let a = integers(want), let b = integers(got) {
            guard let i = a.indices.first(where: { a[$0] != b[$0] }) else { return nil }
            return "element \(i) is \(b[i]), recorded \(a[i]) (integers must match exactly)"
        }
        if case .bool(let a) = want.storage, case .bool(let b) = got.storage {
            guard let i = a.indices.first(where: { a[$0] != b[$0] }) else { return nil }
            return "element \(i) is \(b[i]), recorded \(a[i])"
        }
        if let a = floats(want), let b = floats(got) {
            var worst = 0.0
            var at = -1
            for i in a.indices {
                if a[i].isNaN || b[i].isNaN {
                    if a[i].isNaN != b[i].isNaN { return "element \(i) is \(b[i]), recorded \(a[i])" }
                    continue
                }
                let d = abs(a[i] - b[i])
                if d > worst || (d.isNaN && at < 0) {
                    worst = d
                    at = i
                }
            }
            guard at >= 0, worst > tolerance else { return nil }
            return "element \(at) is \(b[at]), recorded \(a[at]) (|difference| \(worst) > tolerance \(tolerance))"
        }
        return "dtype \(got.dtype), recorded \(want.dtype)"
    }

    private static func integers(_ t: Tensor) -> [Int64]? {
        switch t.storage {
        case .int32(let v): return v.map(Int64.init)
        case .int64(let v): return v
        default: return nil
        }
    }

    private static func floats(_ t: Tensor) -> [Double]? {
        switch t.storage {
        case .float32(let v): return v.map(Double.init)
        case .float64(let v): return v
        default: return nil
        }
    }
}

/// A GraphRunner that passes every call to another runner and keeps what went in and came out,
/// so a session can be replayed later (`replay()`) without a runtime.
public final class RecordingRunner: GraphRunner {
    public let base: GraphRunner
    /// The tolerance recorded steps get.
    public let tolerance: Double
    private let recorded = Mutex<[ReplayRunner.Step]>([])

    public init(wrapping base: GraphRunner, tolerance: Double = 0) {
        self.base = base
        self.tolerance = tolerance
    }

    public var manifest: Manifest { base.manifest }

    /// The calls recorded so far, in order.
    public var steps: [ReplayRunner.Step] { recorded.withLock { $0 } }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]
    {
        let out = try await base.run(graph: graph, function: function, inputs: inputs, state: state)
        let step = ReplayRunner.Step(
            graph: graph, function: function, state: state, inputs: inputs, outputs: out, tolerance: tolerance)
        recorded.withLock { $0.append(step) }
        return out
    }

    public func resetState(graph: String, state: String) async throws {
        try await base.resetState(graph: graph, state: state)
    }

    public func close() async { await base.close() }

    /// A ReplayRunner over what was recorded so far.
    public func replay() -> ReplayRunner { ReplayRunner(manifest: manifest, steps: steps) }
}
