import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// The Swift Chatterbox Turbo host through the real Core AI runtime (WorkerRunner -> `voxport
/// serve`) on the whole reduced random-weight bundle (`bundles/chatterbox_turbo-fp32-reduced-seed0`,
/// `voxport export chatterbox_turbo --config reduced --weights random`), against the Python
/// pipeline on the same bundle (`chatterbox_turbo_case.py make`: `speak` of a text that splits in
/// two chunks, each chunk's draws from (seed, chunk) recorded): ChatterboxTurboSpeaker (from
/// `BundleSpeaker.open` over the worker, its own front end on the bundle's tokenizer.json) gives
/// Python's chunks, ids and audio for the same text and draws; T3's tokens and the S3Gen tokens
/// (the silence tail) equal Python's for Python's uniforms; empty text gets the pipeline's answer
/// before any graph runs.
///
/// One worker serves the whole class; it starts as soon as the Python side says the bundle is
/// current, so its graph load overlaps the Python run.
final class ChatterboxTurboWorkerTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("chatterbox_turbo_case.py")

    struct Case: Decodable {
        struct Chunk: Decodable {
            let text: String
            let ids: [Int32]
            let tokens: [Int]
            let stopped: Bool
            let speech_tokens: [Int]
            let samples: Int
        }
        struct Bad: Decodable {
            let text: String
            let error: String
        }
        let bundle: String
        let text: String
        let seed: Int
        let chunks: [Chunk]
        let samples: Int
        let bad: [Bad]
    }

    struct Shared {
        let dir: URL
        let kase: Case
        let bundle: ModelBundle
        let worker: WorkerRunner
    }

    nonisolated(unsafe) static var made: Result<Shared, Error>?

    static func shared() async throws -> Shared {
        if let made { return try made.get() }
        let result: Result<Shared, Error>
        do {
            result = .success(try await start())
        } catch {
            result = .failure(error)
        }
        made = result
        return try result.get()
    }

    static func start() async throws -> Shared {
        let dir = try TestScratch.folder("chatterbox-turbo-e2e")
        let child = try PythonChild.start(script, ["make", dir.path], log: dir.appendingPathComponent("python.log"))
        guard let line = child.firstLine(), let first = String(decoding: line, as: UTF8.self).split(separator: "\n").first
        else {
            child.process.waitUntilExit()
            throw child.failure("failed before naming its bundle")
        }
        let bundle: ModelBundle
        let worker: WorkerRunner
        do {
            bundle = try ModelBundle.open(URL(fileURLWithPath: String(first)), verify: false)
            worker = try await WorkerRunner(bundle: bundle.url)
        } catch {
            child.process.waitUntilExit()
            throw error
        }
        _ = child.readToEnd()
        child.process.waitUntilExit()
        guard child.process.terminationStatus == 0 else {
            await worker.close()
            throw child.failure("failed (exit \(child.process.terminationStatus))")
        }
        let kase = try JSONDecoder().decode(Case.self, from: Data(contentsOf: dir.appendingPathComponent("case.json")))
        return Shared(dir: dir, kase: kase, bundle: bundle, worker: worker)
    }

    override class func tearDown() {
        // Dropping the last reference ends the worker (WorkerProcess's deinit closes the child).
        made = nil
        super.tearDown()
    }

    static func speaker(_ s: Shared, runner: GraphRunner) throws -> ChatterboxTurboSpeaker {
        guard case .chatterboxTurbo(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: runner, verify: false) else {
            throw VoxportError(.user, "\(s.kase.bundle) did not open as a ChatterboxTurboSpeaker")
        }
        return speaker
    }

    /// Text -> ChatterboxTurboSpeaker -> audio through the worker, against Python's `speak` of
    /// the same text with the same draws: the chunks' text (after punc_norm) and ids, each
    /// chunk's length, and the audio within 2e-5 of its peak (measured: 5.6e-6; the same T3
    /// tokens, the flow's and HiFT's host sums ordered differently in the two hosts).
    func testChatterboxTurboSpeakerThroughTheWorkerGivesPythonsSpeech() async throws {
        let s = try await Self.shared()
        let speaker = try Self.speaker(s, runner: s.worker)
        XCTAssertEqual(speaker.model, "chatterbox_turbo")
        XCTAssertGreaterThan(s.kase.chunks.count, 1, "the case should span more than one chunk")
        let split = try speaker.chunks(s.kase.text)
        XCTAssertEqual(split.map(\.text), s.kase.chunks.map(\.text), "punc_norm and the split")
        XCTAssertEqual(split.map(\.ids), s.kase.chunks.map(\.ids), "the tokenizer")
        var options = speaker.makeOptions()
        options.draws = try RecordedChunkDraws(s.dir, count: s.kase.chunks.count)
        let chunks = try await SpeakerParity.collect(try speaker.speak(s.kase.text, voice: nil, options: options))
        XCTAssertEqual(chunks.map(\.text), s.kase.chunks.map(\.text))
        XCTAssertEqual(chunks.map(\.piece), Array(s.kase.chunks.indices))
        XCTAssertTrue(chunks.allSatisfy { $0.pieceCount == s.kase.chunks.count && $0.sampleRate == 24_000 })
        XCTAssertEqual(chunks.map(\.samples.count), s.kase.chunks.map(\.samples), "each chunk's samples")
        let python = try RawF32.read(s.dir.appendingPathComponent("audio.f32"))
        let swift = chunks.flatMap(\.samples)
        XCTAssertEqual(swift.count, s.kase.samples)
        XCTAssertGreaterThan(python.map { abs($0) }.max() ?? 0, 1e-3, "the Python audio is silent: nothing to compare")
        let error = SpeakerParity.relativeError(swift, python)
        print("chatterbox turbo speaker e2e: \(chunks.count) chunks, \(swift.count) samples, max|Δ|/max|ref| \(error)")
        XCTAssertLessThanOrEqual(error, 2e-5, "max|Δ|/max|ref| over every sample")
    }

    func testSwiftT3ThroughTheWorkerGivesPythonsTokensAndTheSilenceTail() async throws {
        let s = try await Self.shared()
        let host = try ChatterboxTurboPipeline(runner: s.worker, bundle: s.bundle)
        let draws = try RecordedChunkDraws(s.dir, count: s.kase.chunks.count)
        for (i, chunk) in s.kase.chunks.enumerated() {
            let rows = draws.chunks[i].rows
            XCTAssertEqual(rows.count, chunk.stopped ? chunk.tokens.count + 1 : chunk.tokens.count, "one uniform row per draw")
            let r = try await host.t3(textIDs: chunk.ids, voice: host.files.defaultVoice!, options: ChatterboxTurboOptions(),
                                      uniforms: RecordedUniforms(rows))
            XCTAssertEqual(r.tokens, chunk.tokens, "chunk \(i): T3 tokens for Python's uniforms")
            XCTAssertEqual(r.stopped, chunk.stopped)
            XCTAssertEqual(ChatterboxTurboSpeechTokens.forS3Gen(r.tokens), chunk.speech_tokens, "chunk \(i): the S3Gen tokens")
        }
        print("chatterbox turbo e2e: \(s.kase.chunks.map(\.tokens.count)) T3 tokens through the worker")
    }

    func testEmptyTextGetsThePipelinesAnswerBeforeAnyGraphRuns() async throws {
        let s = try await Self.shared()
        let counter = CountingRunner(s.worker)
        let speaker = try Self.speaker(s, runner: counter)
        XCTAssertFalse(s.kase.bad.isEmpty)
        for bad in s.kase.bad {
            XCTAssertThrowsError(try speaker.speak(bad.text)) { e in
                XCTAssertEqual("\(e)", bad.error, PythonRepr.string(bad.text))
            }
        }
        XCTAssertEqual(counter.calls, 0, "no graph ran")
    }
}
