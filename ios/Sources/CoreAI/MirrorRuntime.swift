import Foundation
import Synchronization
import VoxportCore
import VoxportWorker

/// The Core AI runtime behind the mirror: one `voxport serve --assets` child per process
/// (docs/worker-protocol.md, "Serving assets"), shared by every loaded model, as Apple's
/// runtime is one per process. It starts with the first `AIModel` and ends with the last one
/// released. Each call carries the inputs and the current contents of every state to the child
/// and brings back the outputs and the states' new contents, which the mirror writes into the
/// caller's views: the caller owns its states, as on a device.
///
/// The child is found as WorkerRunner finds it: `VOXPORT`, else the first `.venv/bin/voxport`
/// above the asset, then above the working directory.
final class MirrorRuntime: Sendable {
    let worker: WorkerProcess
    private let nextID = Atomic<Int>(0)

    private init(worker: WorkerProcess) { self.worker = worker }

    /// The process's runtime, started on first use (a second caller waits for the first start).
    static func shared(near asset: URL) async throws -> MirrorRuntime {
        try await registry.runtime(near: asset)
    }

    private static let registry = Registry()

    /// Holds the running child weakly: the models that use it keep it alive.
    private actor Registry {
        weak var current: MirrorRuntime?
        var starting: Task<MirrorRuntime, Error>?

        func runtime(near asset: URL) async throws -> MirrorRuntime {
            if let current { return current }
            if let starting { return try await starting.value }
            let task = Task { try await MirrorRuntime.start(near: asset) }
            starting = task
            defer { starting = nil }
            let runtime = try await task.value
            current = runtime
            return runtime
        }
    }

    private static func start(near asset: URL) async throws -> MirrorRuntime {
        let env = ProcessInfo.processInfo.environment
        guard let exe = WorkerProcess.findExecutable(near: asset, environment: env) else {
            throw CoreAIError(
                "the CoreAI mirror needs the Linux Core AI runtime through `voxport serve --assets`: set VOXPORT "
                    + "or create the project's .venv (make setup) in a folder above \(asset.path) or the working directory")
        }
        let (worker, ready) = try await WorkerProcess.start(
            executable: exe, arguments: ["serve", "--assets"], environment: env, timeout: nil)
        guard ready.header["mode"] == .string("assets") else {
            await worker.close()
            throw CoreAIError("\(exe.path) serve --assets did not start in assets mode: update the project's venv")
        }
        return MirrorRuntime(worker: worker)
    }

    /// Load one asset; its functions as the runtime describes them.
    func load(_ url: URL, options: SpecializationOptions) async throws -> LoadedAsset {
        let header: [String: JSONValue] = [
            "op": .string("load_asset"), "path": .string(url.path),
            "options": .object([
                "compute_units": .string(options.computeUnits),
                "expect_frequent_reshapes": .bool(options.expectFrequentReshapes),
            ]),
        ]
        let reply = try await worker.request(header, graph: url.lastPathComponent, function: "(load)")
        guard let id = reply.header["asset"]?.intValue, let list = reply.header["functions"]?.arrayValue else {
            throw CoreAIError("the runtime's load_asset reply for \(url.path) has no asset id or functions")
        }
        return LoadedAsset(runtime: self, id: id, url: url, functions: try list.map(Self.function))
    }

    /// One call: the inputs and states out, the outputs and new states back, by name.
    func run(asset: Int, function: String, arrays: [WireArray], states: [String]) async throws -> [String: WireArray] {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let header: [String: JSONValue] = [
            "op": .string("run"), "id": .int(id), "asset": .int(asset), "function": .string(function),
            "states": .array(states.map { .string($0) }),
        ]
        return try await worker.request(header, arrays: arrays, graph: "asset \(asset)", function: function).arrays
    }

    /// Unload an asset no model holds any more (nothing waits for the answer).
    func unload(_ asset: Int) {
        let worker = self.worker
        Task { _ = try? await worker.request(["op": .string("unload_asset"), "asset": .int(asset)], graph: "", function: "") }
    }

    /// An asset's function names, from a short-lived child (for the synchronous `summary`).
    static func functionNames(of url: URL) throws -> [String] {
        let env = ProcessInfo.processInfo.environment
        guard let exe = WorkerProcess.findExecutable(near: url, environment: env) else {
            throw CoreAIError("no voxport executable to read \(url.path) with: set VOXPORT or create the project's .venv")
        }
        let reply = try WorkerProcess.oneShot(
            executable: exe, arguments: ["serve", "--assets"], environment: env,
            request: ["op": .string("load_asset"), "path": .string(url.path)])
        return (reply.header["functions"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
    }

    private static func function(_ f: JSONValue) throws -> InferenceFunctionDescriptor {
        func values(_ key: String) throws -> [InferenceFunctionDescriptor.Value] {
            try (f[key]?.arrayValue ?? []).map { v in
                guard let name = v["name"]?.stringValue, let dtype = v["dtype"]?.stringValue,
                    let shape = v["shape"]?.arrayValue?.compactMap(\.intValue)
                else { throw CoreAIError("a malformed \(key) entry \(v) in the runtime's description") }
                guard let type = NDArray.ScalarType(wireName: dtype) else {
                    throw CoreAIError("\(key) '\(name)' has dtype \(dtype), which the mirror cannot hold")
                }
                return .init(name: name, descriptor: NDArrayDescriptor(shape: shape, scalarType: type))
            }
        }
        guard let name = f["name"]?.stringValue else { throw CoreAIError("a function without a name in the runtime's description") }
        return InferenceFunctionDescriptor(
            name: name, inputs: try values("inputs"), outputs: try values("outputs"), states: try values("states"))
    }
}

/// An asset loaded in the runtime child, for as long as a model or function refers to it.
final class LoadedAsset: Sendable {
    let runtime: MirrorRuntime
    let id: Int
    let url: URL
    let functions: [InferenceFunctionDescriptor]

    init(runtime: MirrorRuntime, id: Int, url: URL, functions: [InferenceFunctionDescriptor]) {
        self.runtime = runtime
        self.id = id
        self.url = url
        self.functions = functions
    }

    deinit { runtime.unload(id) }
}
