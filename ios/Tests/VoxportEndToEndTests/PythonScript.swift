import Foundation
import VoxportCore

/// A script of the repository's Python side, run to completion through the project's venv.
enum PythonScript {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = repo.appendingPathComponent(".venv/bin/python")

    /// Run `script args` from the repository root; a failure is a user error with its stderr tail.
    static func run(_ script: URL, _ args: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw VoxportError(.user, "no \(python.path): run `make setup` at the repository root first")
        }
        let p = Process()
        p.executableURL = python
        p.arguments = [script.path] + args
        p.currentDirectoryURL = repo
        let err = FileManager.default.temporaryDirectory.appendingPathComponent("voxport-script-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: err) }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = try FileHandle(forWritingTo: err)
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            let tail = (try? String(contentsOf: err, encoding: .utf8)).map { String($0.suffix(3000)) } ?? ""
            throw VoxportError(.user, "\(script.lastPathComponent) failed (exit \(p.terminationStatus)): \(tail)")
        }
    }
}
