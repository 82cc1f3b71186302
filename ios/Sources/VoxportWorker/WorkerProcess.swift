#if os(Linux) || os(macOS)
import Dispatch
import Foundation
import VoxportCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `voxport serve` child and its pipes (docs/worker-protocol.md): one request at a time, each
/// bounded by `timeout`, answered without blocking the caller's thread.
///
/// Every exchange runs on `queue`, a serial dispatch queue of this process's own, and the
/// caller awaits it through a continuation: the blocking reads and writes (poll with a deadline)
/// park a dispatch thread, never a thread of Swift's cooperative pool. Used by `WorkerRunner`
/// (a bundle served whole) and by the `CoreAI` mirror (`voxport serve --assets`). Not available on
/// iOS (no `Process`).
package final class WorkerProcess: @unchecked Sendable {
    // @unchecked: `process`, `pipe` and the two handles are used only on `queue` (one request at
    // a time), or in `deinit`, when no other reference exists; `closed` is read and written only
    // on `queue` too. Nothing else is mutable.
    private let process: Process
    private let pipe: FramePipe
    private let toWorker: FileHandle
    private let fromWorker: FileHandle
    private let log: URL
    private let timeout: Double?
    private let queue: DispatchQueue
    private var closed = false

    // Writing to a worker that died must be an EPIPE error here, not a SIGPIPE that ends the host.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Start the child (`executable arguments`) and wait for its `ready` frame, which is returned.
    package static func start(
        executable: URL, arguments: [String], environment: [String: String], timeout: Double?
    ) async throws -> (WorkerProcess, ready: WorkerFrame) {
        let worker = try WorkerProcess(executable: executable, arguments: arguments, environment: environment, timeout: timeout)
        let ready = try await worker.onQueue { try worker.readReady() }
        return (worker, ready)
    }

    /// Start a child, ask it one thing, and end it: for a synchronous API that must read what
    /// only the runtime can (the CoreAI mirror's `AIModelAsset.summary`, a file read on a
    /// device). It blocks the calling thread for the child's life: never call it from a task.
    package static func oneShot(
        executable: URL, arguments: [String], environment: [String: String], request: [String: JSONValue],
        timeout: Double = 600
    ) throws -> WorkerFrame {
        let worker = try WorkerProcess(executable: executable, arguments: arguments, environment: environment, timeout: timeout)
        return try worker.queue.sync {
            defer { worker.closeNow() }
            _ = try worker.readReady()
            return try worker.requestNow(request, arrays: [], graph: "(one request)", function: "(one request)")
        }
    }

    private init(executable: URL, arguments: [String], environment: [String: String], timeout: Double?) throws {
        _ = WorkerProcess.ignoreSIGPIPE
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
        queue = DispatchQueue(label: "voxport.worker.\(p.processIdentifier)")
    }

    /// The first frame, which must be `ready` in this protocol; the child is closed otherwise.
    private func readReady() throws -> WorkerFrame {
        do {
            let ready = try exchange(nil, arrays: [], graph: "(start)", function: "(start)")
            guard ready.header["op"] == .string("ready"),
                ready.header["protocol"] == .string(WorkerFrames.protocolName)
            else {
                throw RunnerError(
                    .protocolError, "the worker's first frame is not a \(WorkerFrames.protocolName) ready frame")
            }
            return ready
        } catch let e as RunnerError where e.kind == .runtimeCrash {
            closeNow()
            // Exited before ready: a bad bundle (exit 2, one line on stderr) or a crash while loading.
            let user = e.message.contains("(exit code 2)")
            throw RunnerError(
                user ? .user : .launch,
                "voxport serve exited before it was ready: " + e.message.replacingOccurrences(
                    of: "the Core AI runtime crashed in graph '(start)' function '(start)' ", with: ""),
                type: user ? "UserError" : nil)
        } catch {
            closeNow()
            throw error
        }
    }

    /// `VOXPORT`, else the first `.venv/bin/voxport` above `near`, then above the working
    /// directory; nil when there is none.
    package static func findExecutable(
        near path: URL, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL? {
        if let v = environment["VOXPORT"], !v.isEmpty { return URL(fileURLWithPath: v) }
        let fm = FileManager.default
        for start in [path.standardizedFileURL.path, fm.currentDirectoryPath] {
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

    /// Whether the child is still running.
    package var isAlive: Bool { process.isRunning }

    /// The child's pid.
    package var pid: Int32 { process.processIdentifier }

    /// Send a request and return its (ok) reply; an error reply throws with the worker's type.
    /// `graph` and `function` only name the call in errors.
    package func request(_ header: [String: JSONValue], arrays: [WireArray] = [], graph: String, function: String)
        async throws -> WorkerFrame
    {
        try await onQueue { try self.requestNow(header, arrays: arrays, graph: graph, function: function) }
    }

    /// Ask the child to exit and wait for it (killed after 10 s); idempotent.
    package func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            queue.async {
                self.closeNow()
                done.resume()
            }
        }
    }

    /// `body` on `queue`, awaited without blocking the caller's thread.
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<T, Error>) in
            queue.async { done.resume(with: Result { try body() }) }
        }
    }

    private func requestNow(_ header: [String: JSONValue], arrays: [WireArray], graph: String, function: String)
        throws -> WorkerFrame
    {
        guard !closed else { throw RunnerError(.closed, "this worker is closed") }
        let reply = try exchange(header, arrays: arrays, graph: graph, function: function)
        if let id = header["id"], reply.header["id"] != id {
            throw RunnerError(.protocolError, "the reply to request \(id) has id \(reply.header["id"] ?? .null)")
        }
        return reply
    }

    private func exchange(_ header: [String: JSONValue]?, arrays: [WireArray], graph: String, function: String)
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

    private func closeNow() {
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

    deinit { closeNow() }
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
