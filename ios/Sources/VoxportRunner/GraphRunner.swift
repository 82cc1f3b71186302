@_exported import VoxportWorker  // RunnerError, Tensor and the wire types are part of this API
import VoxportCore

/// What every host is written against: run one function of one graph of a bundle.
///
/// Three runners implement it — `CoreAIRunner` (Core AI: Apple's framework on a device, the
/// package's `CoreAI` mirror over the Linux runtime here), `WorkerRunner` (the real Core AI
/// runtime in a Python child, `voxport serve BUNDLE`) and `ReplayRunner` (answers from a
/// recording, failing when an input differs). State (KV caches) lives in the runner, per graph
/// and per `state` key, as in Python's `Session`.
///
/// Calls are `async` because Core AI's are: a host awaits each one and no thread waits for a
/// graph. One runner may be shared between tasks (`Sendable`); calls on one `state` key form one
/// sequence, so a host makes them one after another.
public protocol GraphRunner: AnyObject, Sendable {
    /// The bundle's manifest (graphs, functions, buckets, host files).
    var manifest: Manifest { get }

    /// Run `graph.function` on `inputs`; the outputs by name.
    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]

    /// Zero the state arrays of `graph` under `state`.
    func resetState(graph: String, state: String) async throws

    /// End the runner (a worker child exits); calling `run` afterwards is an error.
    func close() async
}

extension GraphRunner {
    public func run(graph: String, function: String, inputs: [String: Tensor]) async throws
        -> [String: Tensor]
    {
        try await run(graph: graph, function: function, inputs: inputs, state: "default")
    }

    /// Zero the state arrays of `graph` under the default state key (as `run` without `state`).
    public func resetState(graph: String) async throws {
        try await resetState(graph: graph, state: "default")
    }
}
