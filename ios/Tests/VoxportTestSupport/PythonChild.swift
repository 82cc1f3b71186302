import Foundation
import VoxportCore

/// The repository's Python side as the Swift tests run it: a script of the repository through
/// the project's venv, from the repository root, its stderr kept in a log whose tail a failure
/// names. One way to start it, for every test target (the end-to-end cases, the runner's
/// recording): to completion (`run`), or started and read line by line while the Swift side
/// works (`start`).
public enum PythonChild {
    /// `<repo>/ios/Tests/VoxportTestSupport/PythonChild.swift` -> `<repo>`.
    public static let repo: URL = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static let python = repo.appendingPathComponent(".venv/bin/python")
    public static let voxport = repo.appendingPathComponent(".venv/bin/voxport")

    /// The venv's programs exist, or a user error naming the fix.
    public static func checkVenv() throws {
        for exe in [python, voxport] where !FileManager.default.isExecutableFile(atPath: exe.path) {
            throw VoxportError(
                .user,
                "no \(exe.path): these tests drive the real Core AI runtime through the project's venv; "
                    + "run `make setup` at the repository root first")
        }
    }

    /// `python script args` to completion: its stdout; a non-zero exit is a user error with the
    /// tail of its stderr.
    @discardableResult
    public static func run(_ script: URL, _ args: [String]) throws -> String {
        let child = try start(script, args, log: try logFile())
        defer { try? FileManager.default.removeItem(at: child.log) }
        let out = child.readToEnd()
        try child.finish()
        return String(decoding: out, as: UTF8.self)
    }

    /// `python script args` started: stdout a pipe the caller reads, stderr into `log`.
    public static func start(_ script: URL, _ args: [String], log: URL) throws -> Started {
        try checkVenv()
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let p = Process()
        p.executableURL = python
        p.arguments = [script.path] + args
        p.currentDirectoryURL = repo
        let out = Pipe()
        p.standardOutput = out
        p.standardError = try FileHandle(forWritingTo: log)
        try p.run()
        return Started(process: p, stdout: out, log: log, name: ([script.lastPathComponent] + args.prefix(1)).joined(separator: " "))
    }

    /// A log file in this test process's scratch folder.
    static func logFile() throws -> URL {
        try TestScratch.folder("python-logs").appendingPathComponent("\(UUID().uuidString).log")
    }

    /// A started child: read its stdout, wait for it, name its failure.
    public final class Started: @unchecked Sendable {
        public let process: Process
        public let stdout: Pipe
        public let log: URL
        /// "script verb", for messages.
        public let name: String

        init(process: Process, stdout: Pipe, log: URL, name: String) {
            self.process = process
            self.stdout = stdout
            self.log = log
            self.name = name
        }

        /// Its first stdout line (without the newline), or nil when stdout closed before one.
        public func firstLine() -> Data? {
            var read = Data()
            while true {
                if let end = read.firstIndex(of: UInt8(ascii: "\n")) { return Data(read[read.startIndex..<end]) }
                let chunk = stdout.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                read += chunk
            }
        }

        /// The rest of its stdout, to the end.
        public func readToEnd() -> Data { stdout.fileHandleForReading.readDataToEndOfFile() }

        /// The last 3,000 characters of its stderr.
        public func logTail() -> String {
            (try? String(contentsOf: log, encoding: .utf8)).map { String($0.suffix(3000)) } ?? ""
        }

        /// A user error naming the child, `what` went wrong, and its stderr's tail.
        public func failure(_ what: String) -> VoxportError {
            VoxportError(.user, "\(name) \(what): \(logTail())")
        }

        /// Wait for it to exit; a non-zero exit is `failure`.
        public func finish() throws {
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw failure("failed (exit \(process.terminationStatus))") }
        }

        public func terminate() { if process.isRunning { process.terminate() } }
    }
}
