import VoxportCore

/// A tensor crossing the host/graph boundary: shape plus typed, C-order storage (the same
/// type the host reads from `.npz` files).
public typealias Tensor = NpyArray

/// What every host is written against: run one function of one graph of a bundle.
///
/// Three runners implement it — `CoreAIRunner` (Core AI on an Apple device), `WorkerRunner`
/// (the real Core AI runtime in a Python child, `voxport serve BUNDLE`) and `ReplayRunner`
/// (answers from a recording, failing when an input differs). State (KV caches) lives in the
/// runner, per graph and per `state` key, as in Python's `Session`.
public protocol GraphRunner: AnyObject {
    /// The bundle's manifest (graphs, functions, buckets, host files).
    var manifest: Manifest { get }

    /// Run `graph.function` on `inputs`; the outputs by name.
    func run(graph: String, function: String, inputs: [String: Tensor], state: String) throws
        -> [String: Tensor]

    /// Zero the state arrays of `graph` under `state`.
    func resetState(graph: String, state: String) throws

    /// End the runner (a worker child exits); calling `run` afterwards is an error.
    func close()
}

extension GraphRunner {
    public func run(graph: String, function: String, inputs: [String: Tensor]) throws
        -> [String: Tensor]
    {
        try run(graph: graph, function: function, inputs: inputs, state: "default")
    }
}
