import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// What chatterbox_case.py and chatterbox_turbo_case.py write (s3gen_case.py's case.json).
struct S3GenCase: Decodable {
    struct Chunk: Decodable {
        let text: String
        let ids: [Int32]
        let tokens: [Int]
        let stopped: Bool
        let speech_tokens: [Int]
        let samples: Int
    }
    /// What the pipeline's front end says to a bad text: its error, or its chunks.
    struct Bad: Decodable {
        struct Piece: Decodable {
            let text: String
            let ids: [Int32]
        }
        let text: String
        let error: String?
        let chunks: [Piece]?
    }
    let bundle: String
    let text: String
    let seed: Int
    let chunks: [Chunk]
    let samples: Int
    let bad: [Bad]
}

/// A case script's answers and a worker on its bundle, with the bundle's host files: the Python
/// case runs while the worker loads its graphs and `load` reads the host tables (the export,
/// when the bundle is missing, comes first).
struct S3GenWorkerCase<Files: Sendable> {
    let dir: URL
    let kase: S3GenCase
    let bundle: ModelBundle
    let files: Files
    let worker: WorkerRunner

    static func start(script: URL, scratch: String, load: @escaping @Sendable (ModelBundle) throws -> Files) async throws -> Self {
        let t0 = DispatchTime.now().uptimeNanoseconds
        let dir = try TestScratch.folder(scratch)
        let child = try PythonChild.start(script, ["make", dir.path], log: dir.appendingPathComponent("python.log"))
        // The first stdout line: the bundle, current (exported first when it was not).
        guard let line = child.firstLine(), let first = String(decoding: line, as: UTF8.self).split(separator: "\n").first
        else {
            child.process.waitUntilExit()
            throw child.failure("failed before naming its bundle")
        }
        let tBundle = seconds(since: t0)
        // The Python side has just checked the bundle is current, and the worker verifies it as
        // it loads; the host tables load here while the worker loads its graphs.
        let bundle: ModelBundle
        let worker: WorkerRunner
        let loadedFiles: Result<Files, Error>
        do {
            let opened = try ModelBundle.open(URL(fileURLWithPath: String(first)), verify: false)
            bundle = opened
            // A child task reads the tables while this one awaits the worker (leaving the scope
            // early, on a failed start, awaits the child task first).
            async let tables = Result { try load(opened) }
            let w: Result<WorkerRunner, Error>
            do {
                w = .success(try await WorkerRunner(bundle: opened.url))
            } catch {
                w = .failure(error)
            }
            loadedFiles = await tables
            worker = try w.get()
        } catch {
            child.process.waitUntilExit()
            throw error
        }
        let tWorker = seconds(since: t0)
        _ = child.readToEnd()
        child.process.waitUntilExit()
        let status = child.process.terminationStatus
        guard status == 0, let files = try? loadedFiles.get() else {
            await worker.close()
            if status == 0 { _ = try loadedFiles.get() }
            throw child.failure("failed (exit \(status))")
        }
        let kase = try JSONDecoder().decode(S3GenCase.self, from: Data(contentsOf: dir.appendingPathComponent("case.json")))
        print(String(format: "\(scratch): bundle current after %.1f s, worker and host tables ready after %.1f s, Python case done after %.1f s",
                     tBundle, tWorker, seconds(since: t0)))
        return Self(dir: dir, kase: kase, bundle: bundle, files: files, worker: worker)
    }

    static func seconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9 }

    /// A Speaker's `chunks` (its front end's split) and its stream's chunks against the case's
    /// text through Python's `speak` with the same draws: the chunks' text (after punc_norm) and
    /// ids, the stream, each chunk's length, and the audio within `bound` of its peak.
    func assertSpeech(split: [TextChunk], _ chunks: [SpeechChunk], bound: Double, _ label: String,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertGreaterThan(kase.chunks.count, 1, "the case should span more than one chunk", file: file, line: line)
        XCTAssertEqual(split.map(\.text), kase.chunks.map(\.text), "punc_norm and the split", file: file, line: line)
        XCTAssertEqual(split.map(\.ids), kase.chunks.map(\.ids), "the tokenizer", file: file, line: line)
        XCTAssertEqual(chunks.map(\.text), kase.chunks.map(\.text), file: file, line: line)
        XCTAssertEqual(chunks.map(\.piece), Array(kase.chunks.indices), file: file, line: line)
        XCTAssertTrue(chunks.allSatisfy { $0.pieceCount == kase.chunks.count && $0.sampleRate == 24_000 }, file: file, line: line)
        XCTAssertEqual(chunks.map(\.samples.count), kase.chunks.map(\.samples), "each chunk's samples", file: file, line: line)
        let python = try RawF32.read(dir.appendingPathComponent("audio.f32"))
        let swift = chunks.flatMap(\.samples)
        XCTAssertEqual(swift.count, kase.samples, file: file, line: line)
        XCTAssertGreaterThan(python.map { abs($0) }.max() ?? 0, 1e-3, "the Python audio is silent: nothing to compare", file: file, line: line)
        let error = SpeakerParity.relativeError(swift, python)
        print("\(label) e2e: \(chunks.count) chunks, \(swift.count) samples, max|Δ|/max|ref| \(error)")
        XCTAssertLessThanOrEqual(error, bound, "max|Δ|/max|ref| over every sample", file: file, line: line)
    }
}

/// A value made once and kept (a test class's shared case: dropping it with `reset` ends its
/// worker, whose WorkerProcess's deinit closes the child).
final class MadeOnce<T>: @unchecked Sendable {
    private var made: Result<T, Error>?

    func get(_ make: () async throws -> T) async throws -> T {
        if let made { return try made.get() }
        let result: Result<T, Error>
        do {
            result = .success(try await make())
        } catch {
            result = .failure(error)
        }
        made = result
        return try result.get()
    }

    func reset() { made = nil }
}
