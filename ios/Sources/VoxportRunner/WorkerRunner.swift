#if os(Linux) || os(macOS)
import Foundation
import VoxportCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// The worker's own time for the last `run` (its reply's `ms`): the call's wall time minus
    /// this is the protocol's overhead.
    public private(set) var lastServerMilliseconds: Double?

    private let worker: Worker
    private var nextID = 0

    /// Start `voxport serve BUNDLE` (loading `graphs`, or all) and wait for its `ready` frame.
    public init(
        bundle: URL, executable: URL? = nil, graphs: [String]? = nil, timeout: Double? = 3600,
        environment: [String: String]? = nil
    ) throws {
        let env = environment ?? ProcessInfo.processInfo.environment
        guard let exe = executable ?? WorkerRunner.findExecutable(near: bundle, environment: env) else {
            throw RunnerError(
                .launch,
                "no voxport executable: pass executable:, set VOXPORT, or create the project's .venv "
                    + "(pip install -e .) in a folder above \(bundle.path) or the working directory")
        }
        var args = ["serve", bundle.path]
        if let graphs { args += ["--graphs", graphs.joined(separator: ",")] }
        let w = try Worker(executable: exe, arguments: args, environment: env, timeout: timeout)
        let describe: WorkerFrame
        do {
            describe = try w.request(["op": .string("describe")], graph: "(describe)", function: "(describe)")
            guard let value = describe.header["manifest"] else {
                throw RunnerError(.protocolError, "the worker's describe reply has no manifest")
            }
            manifest = try Manifest.decode(JSONEncoder().encode(value), source: "\(bundle.path) (describe)")
        } catch {
            w.close()
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
        if let v = environment["VOXPORT"], !v.isEmpty { return URL(fileURLWithPath: v) }
        let fm = FileManager.default
        for start in [bundle.standardizedFileURL.path, fm.currentDirectoryPath] {
            var dir = start
            while true {
                let candidate = (dir.hasSuffix("/") ? dir : dir + "/") + ".venv/bin/voxport"
                if fm.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
                guard let cut = dir.dropLast().lastIndex(of: "/") else { break }
                let parent = cut == dir.startIndex ? "/" : String(dir[..<cut])
                if parent == dir { break }
                dir = parent
            }
        }
        return nil
    }

    /// Whether the worker process is still running.
    public var isAlive: Bool { worker.isAlive }

    public func run(graph: String, function: String, inputs: [String: Tensor], state: String) throws
        -> [String: Tensor]
    {
        // The manifest's input order (any names it does not declare after, for the worker to name).
        let declared = (try? manifest.function(graph: graph, function: function).inputs.map(\.name)) ?? []
        var ordered = declared.compactMap { name in inputs[name].map { (name, $0) } }
        ordered += inputs.keys.filter { !declared.contains($0) }.sorted().map { ($0, inputs[$0]!) }
        nextID += 1
        let header: [String: JSONValue] = [
            "op": .string("run"), "id": .int(nextID), "graph": .string(graph),
            "function": .string(function), "state": .string(state),
        ]
        let reply = try worker.request(header, arrays: ordered, graph: graph, function: function)
        lastServerMilliseconds = reply.header["ms"]?.doubleValue
        return reply.arrays
    }

    public func resetState(graph: String, state: String) throws {
        let header: [String: JSONValue] = ["op": .string("reset_state"), "graph": .string(graph), "state": .string(state)]
        _ = try worker.request(header, graph: graph, function: "reset_state")
    }

    /// The worker's state arrays for `graph` under `state`, as they are now (empty before the
    /// first stateful call or after `resetState`).
    public func readState(graph: String, state: String = "default") throws -> [String: Tensor] {
        let header: [String: JSONValue] = ["op": .string("read_state"), "graph": .string(graph), "state": .string(state)]
        return try worker.request(header, graph: graph, function: "read_state").arrays
    }

    public func close() { worker.close() }

    deinit { worker.close() }
}

/// The child process and its pipes: one request at a time, each bounded by `timeout`.
final class Worker {
    private let process: Process
    private let pipe: FramePipe
    private let toWorker: FileHandle
    private let fromWorker: FileHandle
    private let log: URL
    private let timeout: Double?
    private var closed = false

    // Writing to a worker that died must be an EPIPE error here, not a SIGPIPE that ends the host.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    init(executable: URL, arguments: [String], environment: [String: String], timeout: Double?) throws {
        _ = Worker.ignoreSIGPIPE
        let fm = FileManager.default
        log = fm.temporaryDirectory.appendingPathComponent("voxport-worker-\(UUID().uuidString).log")
        _ = fm.createFile(atPath: log.path, contents: nil)
        let stdin = Pipe()
        let stdout = Pipe()
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        p.environment = environment
        p.standardInput = stdin
        p.standardOutput = stdout
        p.standardError = try FileHandle(forWritingTo: log)
        do {
            try p.run()
        } catch {
            try? fm.removeItem(at: log)
            throw RunnerError(.launch, "cannot start \(executable.path): \(error)")
        }
        // Our copies of the child's ends: closed, so its exit reads as end of stream here.
        try? stdin.fileHandleForReading.close()
        try? stdout.fileHandleForWriting.close()
        process = p
        toWorker = stdin.fileHandleForWriting
        fromWorker = stdout.fileHandleForReading
        pipe = FramePipe(readFD: fromWorker.fileDescriptor, writeFD: toWorker.fileDescriptor)
        self.timeout = timeout
        do {
            let ready = try exchange(nil, arrays: [], graph: "(start)", function: "(start)")
            guard ready.header["op"] == .string("ready"),
                ready.header["protocol"] == .string(WorkerFrames.protocolName)
            else {
                throw RunnerError(
                    .protocolError, "the worker's first frame is not a \(WorkerFrames.protocolName) ready frame")
            }
        } catch let e as RunnerError where e.kind == .runtimeCrash {
            close()
            // Exited before ready: a bad bundle (exit 2, one line on stderr) or a crash while loading.
            let user = e.message.contains("(exit code 2)")
            throw RunnerError(
                user ? .user : .launch,
                "voxport serve exited before it was ready: " + e.message.replacingOccurrences(
                    of: "the Core AI runtime crashed in graph '(start)' function '(start)' ", with: ""),
                type: user ? "UserError" : nil)
        } catch {
            close()
            throw error
        }
    }

    var isAlive: Bool { process.isRunning }

    /// Send a request and return its (ok) reply; an error reply throws with the worker's type.
    func request(_ header: [String: JSONValue], arrays: [(String, Tensor)] = [], graph: String, function: String)
        throws -> WorkerFrame
    {
        guard !closed else { throw RunnerError(.closed, "this WorkerRunner is closed") }
        let reply = try exchange(header, arrays: arrays, graph: graph, function: function)
        if let id = header["id"], reply.header["id"] != id {
            throw RunnerError(.protocolError, "the reply to request \(id) has id \(reply.header["id"] ?? .null)")
        }
        return reply
    }

    private func exchange(_ header: [String: JSONValue]?, arrays: [(String, Tensor)], graph: String, function: String)
        throws -> WorkerFrame
    {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        let frame: WorkerFrame
        do {
            if let header { try pipe.send(header, arrays: arrays, deadline: deadline) }
            frame = try pipe.receive(deadline: deadline)
        } catch is FramePipe.Timeout {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let tail = lastWords()
            throw RunnerError(
                .timeout,
                "the Core AI runtime did not answer within \(format(timeout ?? 0)) s in graph '\(graph)' "
                    + "function '\(function)' (the worker was killed)" + (tail.isEmpty ? "" : "; its last words:\n\(tail)"),
                type: "RuntimeTimeout")
        } catch is FramePipe.EndOfStream {
            throw crash(graph: graph, function: function)
        } catch let e as RunnerError where e.kind == .protocolError {
            // Usually the worker died in the middle of a reply; otherwise the stream is broken.
            if waitForExit(seconds: 2) { throw crash(graph: graph, function: function) }
            throw e
        }
        if frame.ok { return frame }
        let error = frame.header["error"] ?? .null
        let type = error["type"]?.stringValue ?? "Error"
        let message = error["message"]?.stringValue ?? "(no message)"
        let kind: RunnerError.Kind =
            type == "InputSpecError" ? .inputSpec
            : type == "ProtocolError" ? .protocolError : error["user"] == .bool(true) ? .user : .runtime
        throw RunnerError(kind, message, type: type)
    }

    /// Wait up to `seconds` for the worker to exit; whether it did.
    private func waitForExit(seconds: Double) -> Bool {
        let end = monotonicSeconds() + seconds
        while process.isRunning && monotonicSeconds() < end { usleep(10_000) }
        return !process.isRunning
    }

    private func crash(graph: String, function: String) -> RunnerError {
        if !waitForExit(seconds: 10) {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let code = process.terminationStatus
        let how =
            process.terminationReason == .uncaughtSignal ? "killed by \(signalName(code))" : "exit code \(code)"
        let tail = lastWords()
        return RunnerError(
            .runtimeCrash,
            "the Core AI runtime crashed in graph '\(graph)' function '\(function)' (\(how))"
                + (tail.isEmpty ? "" : "; its last words:\n\(tail)"),
            type: "RuntimeCrash")
    }

    /// The worker's stderr, without the runtime's per-function load lines, last 1,500 characters.
    private func lastWords() -> String {
        guard let data = try? Data(contentsOf: log) else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        let kept = text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("Loading function") }.joined(separator: "\n")
        return String(kept.suffix(1500)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func close() {
        guard !closed else { return }
        closed = true
        if process.isRunning {
            let deadline = monotonicSeconds() + 10
            if (try? pipe.send(["op": .string("close")], deadline: deadline)) != nil {
                _ = try? pipe.receive(deadline: deadline)
            }
            try? toWorker.close()
            if !waitForExit(seconds: 10) {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        } else {
            try? toWorker.close()
        }
        try? fromWorker.close()
        try? FileManager.default.removeItem(at: log)
    }

    deinit { close() }
}

private func format(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
}

private func signalName(_ n: Int32) -> String {
    let names: [Int32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 8: "SIGFPE",
        9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM",
    ]
    return names[n] ?? "signal \(n)"
}
#endif
