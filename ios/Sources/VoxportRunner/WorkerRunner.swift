#if os(Linux) || os(macOS)
import Foundation
import Synchronization
import VoxportCore
import VoxportWorker

/// A GraphRunner over the real Core AI runtime in a child process: `voxport serve BUNDLE`,
/// spoken to in `voxport-worker/1` frames over its stdin/stdout (docs/worker-protocol.md).
///
/// This is how a Swift host runs graphs on Linux (the Linux Core AI wheel has no Swift or C API,
/// DESIGN.md) and how a Mac checks a host against the Python runtime. State lives in the worker
/// (its `Session`), per graph and `state` key. A runtime abort ends the worker and the call
/// throws `.runtimeCrash` naming the graph and function; a call the worker refuses (a wrong
/// shape) throws `.inputSpec` and the worker keeps serving. Not available on iOS (no `Process`).
///
/// The executable is, in order: `executable`, the `VOXPORT` environment variable, or the first
/// `.venv/bin/voxport` found walking up from the bundle folder, then from the working directory.
/// float16 outputs are widened to float32 (`Tensor` has no half type); float64 inputs are sent
/// as they are and the worker casts them to the graph's dtype, as Python's `Session` does.
public final class WorkerRunner: GraphRunner {
    public let manifest: Manifest
    public let bundle: URL
    public let executable: URL
    /// Seconds one request (a call, sending and answering) may take before the worker is killed
    /// and the call throws `.timeout`; nil waits forever.
    public let timeout: Double?

    private let worker: WorkerProcess
    private struct Calls {
        var nextID = 0
        var lastServerMilliseconds: Double?
    }
    private let calls = Mutex(Calls())

    /// The worker's own time for the last `run` (its reply's `ms`): the call's wall time minus
    /// this is the protocol's overhead.
    public var lastServerMilliseconds: Double? { calls.withLock { $0.lastServerMilliseconds } }

    /// Start `voxport serve BUNDLE` (loading `graphs`, or all) and wait for its `ready` frame.
    public init(
        bundle: URL, executable: URL? = nil, graphs: [String]? = nil, timeout: Double? = 3600,
        environment: [String: String]? = nil
    ) async throws {
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let exe = executable ?? WorkerRunner.findExecutable(near: bundle, environment: env) else {
            throw RunnerError(
                .launch,
                "no voxport executable: pass executable:, set VOXPORT, or create the project's .venv "
                    + "(pip install -e .) in a folder above \(bundle.path) or the working directory")
        }
        var args = ["serve", bundle.path]
        if let graphs { args += ["--graphs", graphs.joined(separator: ",")] }
        let (w, _) = try await WorkerProcess.start(executable: exe, arguments: args, environment: env, timeout: timeout)
        do {
            let describe = try await w.request(["op": .string("describe")], graph: "(describe)", function: "(describe)")
            guard let value = describe.header["manifest"] else {
                throw RunnerError(.protocolError, "the worker's describe reply has no manifest")
            }
            manifest = try Manifest.decode(JSONEncoder().encode(value), source: "\(bundle.path) (describe)")
        } catch {
            await w.close()
            throw error
        }
        self.bundle = bundle
        self.executable = exe
        self.timeout = timeout
        self.worker = w
    }

    /// `VOXPORT`, else the first `.venv/bin/voxport` above `bundle`, then above the working
    /// directory; nil when there is none.
    public static func findExecutable(
        near bundle: URL, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL? {
        WorkerProcess.findExecutable(near: bundle, environment: environment)
    }

    /// Whether the worker process is still running.
    public var isAlive: Bool { worker.isAlive }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
        -> [String: Tensor]
    {
        // The manifest's input order (any names it does not declare after, for the worker to name).
        let declared = (try? manifest.function(graph: graph, function: function).inputs.map(\.name)) ?? []
        var names = declared.filter { inputs[$0] != nil }
        names += inputs.keys.filter { !declared.contains($0) }.sorted()
        let arrays = try names.map { try WorkerFrames.encode($0, inputs[$0]!) }
        let id = calls.withLock { calls -> Int in
            calls.nextID += 1
            return calls.nextID
        }
        let header: [String: JSONValue] = [
            "op": .string("run"), "id": .int(id), "graph": .string(graph),
            "function": .string(function), "state": .string(state),
        ]
        let reply = try await worker.request(header, arrays: arrays, graph: graph, function: function)
        calls.withLock { $0.lastServerMilliseconds = reply.header["ms"]?.doubleValue }
        return try reply.tensors()
    }

    public func resetState(graph: String, state: String) async throws {
        let header: [String: JSONValue] = ["op": .string("reset_state"), "graph": .string(graph), "state": .string(state)]
        _ = try await worker.request(header, graph: graph, function: "reset_state")
    }

    /// The worker's state arrays for `graph` under `state`, as they are now (empty before the
    /// first stateful call or after `resetState`).
    public func readState(graph: String, state: String = "default") async throws -> [String: Tensor] {
        let header: [String: JSONValue] = ["op": .string("read_state"), "graph": .string(graph), "state": .string(state)]
        return try await worker.request(header, graph: graph, function: "read_state").tensors()
    }

    public func close() async { await worker.close() }
}
#endif
