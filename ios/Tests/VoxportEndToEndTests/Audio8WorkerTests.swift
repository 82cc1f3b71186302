import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore
import VoxportHost
import VoxportRunner

/// The whole Swift Audio8 host through the real Core AI runtime (WorkerRunner -> `voxport serve`)
/// on the reduced random-weight bundle (`ar` + `codec`), against the Python pipeline on the same
/// bundle and seed (`audio8_case.py make`, which speaks as `voxport speak audio8_tts TEXT --seed S
/// --stream` does and keeps its wav): both hosts draw the frame loop's uniforms from the
/// seed (numpy's PCG64, reproduced in Swift), so the frame codes must be identical and the
/// decoded audio — streamed in codec windows and whole — within 1e-5 of the Python one's peak;
/// Audio8Speaker (`BundleSpeaker.open` over the worker) speaks the same text into the same
/// chunks and, quantised as the CLI writes it, the CLI's wav within 1 LSB; bad text gets the
/// pipeline's answer before any graph runs.
/// `voxport-bench`'s audio8.frame then runs on the same worker (BenchDriver with an injected
/// runner). One worker and one Python run serve the whole class.
final class Audio8WorkerTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("audio8_case.py")

    struct Case: Decodable {
        struct Piece: Decodable {
            let text: String
            let ids: [Int32]
            let prompt_columns: Int
            let frames: Int
            let codes: [Int32]
            let semantics: [Int32]
            let finished: Bool
            let prefill_calls: Int
            let windows_whole: Int
            let windows_stream: Int
        }
        /// What the pipeline's front end says to a bad text (with a frame budget or a voice):
        /// its error, or its pieces.
        struct Bad: Decodable {
            struct Piece: Decodable {
                let text: String
                let ids: [Int32]
            }
            let text: String
            let max_frames: Int?
            let voice: String?
            let error: String?
            let pieces: [Piece]?
        }
        let bundle: String
        let graphs: [String]
        let text: String
        let seed: Int
        /// The budget `voxport speak`'s options gave (it passes none: the bundle's).
        let max_frames: Int
        let codec_window: Int
        let pieces: [Piece]
        let whole_samples: Int
        let stream_samples: Int
        let stream_chunks: [Int]
        let bad: [Bad]
    }

    struct Shared {
        let dir: URL
        let kase: Case
        let bundle: ModelBundle
        let runner: WorkerRunner
        let host: Audio8Pipeline
    }

    /// The one worker (and the host over it), made once per test process and dropped with the
    /// class.
    nonisolated(unsafe) static var made: Shared?
    /// Python's answers and the Speaker's run through the worker, kept for the whole process:
    /// CoreAIRunnerParityTests holds its own run against them after this class's worker is gone.
    nonisolated(unsafe) static var python: (dir: URL, kase: Case, bundle: ModelBundle)?

    override class func tearDown() {
        // A class tearDown cannot await `close()`: dropping the last reference ends the worker
        // (its WorkerProcess's deinit closes the child and waits for it to exit).
        made = nil
        super.tearDown()
    }

    /// `audio8_case.py make`, once per test process.
    static func pythonCase() throws -> (dir: URL, kase: Case, bundle: ModelBundle) {
        if let python { return python }
        let dir = try TestScratch.folder("audio8-e2e")
        try PythonChild.run(script, ["make", dir.path])
        let kase = try JSONDecoder().decode(Case.self, from: Data(contentsOf: dir.appendingPathComponent("case.json")))
        let made = (dir, kase, try ModelBundle.open(URL(fileURLWithPath: kase.bundle)))
        python = made
        return made
    }

    static func shared() async throws -> Shared {
        if let made { return made }
        let (dir, kase, bundle) = try pythonCase()
        let runner = try await WorkerRunner(bundle: bundle.url, graphs: kase.graphs)
        do {
            let host = try Audio8Pipeline(bundle: bundle, runner: runner)
            made = Shared(dir: dir, kase: kase, bundle: bundle, runner: runner, host: host)
            return made!
        } catch {
            await runner.close()
            throw error
        }
    }

    /// max|Δ| / max|ref| over every sample (the lengths checked first).
    func assertClose(_ got: [Float], _ ref: [Float], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(got.count, ref.count, "\(what): samples", file: file, line: line)
        let peak = ref.map { abs($0) }.max() ?? 0
        XCTAssertGreaterThan(peak, 1e-3, "\(what): the Python audio is silent, nothing to compare", file: file, line: line)
        let worst = zip(got, ref).map { abs($0 - $1) }.max() ?? .infinity
        print("audio8 \(what): \(got.count) samples, max|Δ|/max|ref| = \(worst / peak)")
        XCTAssertLessThanOrEqual(Double(worst / peak), 1e-5, "\(what): max|Δ|/max|ref|", file: file, line: line)
    }

    /// Streamed: the codes, semantic draws and stop as Python's, the same windows emitted (each
    /// chunk's length) and the streamed audio; then the codec over the same codes decoded whole.
    /// The pipeline speaks over a replay of the worker's answers to the Speaker's run (the same
    /// calls: every input must match, so it sees the worker's outputs without asking the worker
    /// again, 12 s saved); the whole decode asks the worker.
    func testSwiftHostThroughTheWorkerGivesPythonsCodesAndAudio() async throws {
        let s = try await Self.shared()
        let kase = s.kase
        XCTAssertEqual(s.host.codec.window, kase.codec_window)
        var chunks: [[Float]] = []
        XCTAssertEqual(s.host.defaultMaxFrames, kase.max_frames, "the frame budget when none is asked for")
        let replay = ReplayRunner(manifest: s.runner.manifest, steps: try await Self.workerSpeech().steps)
        let host = try Audio8Pipeline(bundle: s.bundle, runner: replay)
        let (audio, pieces) = try await host.speak(
            pieces: kase.pieces.map(\.ids), seed: kase.seed, maxFrames: kase.max_frames, stream: true,
            onAudio: { chunks.append($0) })
        XCTAssertEqual(pieces.count, kase.pieces.count)
        for (i, (got, want)) in zip(pieces, kase.pieces).enumerated() {
            XCTAssertEqual(got.promptColumns, want.prompt_columns, "piece \(i)")
            XCTAssertEqual(got.loop.frameCount, want.frames, "piece \(i)")
            XCTAssertEqual(got.loop.frames.map(\.semantic), want.semantics, "piece \(i): semantic draws")
            XCTAssertEqual(got.loop.codes, want.codes, "piece \(i): frame codes [10, T]")
            XCTAssertEqual(got.loop.finished, want.finished, "piece \(i)")
            XCTAssertEqual(got.loop.prefillCalls, want.prefill_calls, "piece \(i)")
            XCTAssertEqual(got.decode.windows, want.windows_stream, "piece \(i): streamed windows")
        }
        XCTAssertGreaterThan(kase.stream_chunks.count, 1, "the case should span more than one codec window")
        XCTAssertEqual(chunks.map(\.count), kase.stream_chunks, "streamed chunks")
        XCTAssertEqual(replay.remaining, 0, "every call of the Speaker's run made, in order")
        assertClose(audio, try RawF32.read(s.dir.appendingPathComponent("stream.f32")), "streamed")

        var whole: [Float] = []
        for (i, p) in pieces.enumerated() {
            var report = Audio8DecodeReport()
            whole += try await s.host.codec.decodeWhole(p.loop.columns, report: &report)
            XCTAssertEqual(report.windows, kase.pieces[i].windows_whole, "piece \(i): whole windows")
        }
        XCTAssertEqual(whole.count, kase.whole_samples)
        assertClose(whole, try RawF32.read(s.dir.appendingPathComponent("whole.f32")), "whole")
    }

    /// What Audio8Speaker (from `BundleSpeaker.open` over `runner`) says for the case's text
    /// with `voxport speak`'s options (the seed, streamed, no frame budget); every graph call
    /// recorded.
    static func speakerSpeech(_ runner: GraphRunner) async throws -> (chunks: [SpeechChunk], steps: [ReplayRunner.Step]) {
        let s = try pythonCase()
        let recorder = RecordingRunner(wrapping: runner)
        guard case .audio8(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: recorder, verify: false) else {
            throw VoxportError(.user, "\(s.kase.bundle) did not open as an Audio8Speaker")
        }
        var options = speaker.makeOptions()
        options.seed = s.kase.seed
        options.stream = true
        let chunks = try await SpeakerParity.collect(try speaker.speak(s.kase.text, voice: nil, options: options))
        return (chunks, recorder.steps)
    }

    nonisolated(unsafe) static var workerRun: Result<(chunks: [SpeechChunk], steps: [ReplayRunner.Step]), Error>?

    /// `speakerSpeech` over the class's worker, once per test process (CoreAIRunnerParityTests
    /// holds CoreAIRunner's speech against the same run).
    static func workerSpeech() async throws -> (chunks: [SpeechChunk], steps: [ReplayRunner.Step]) {
        if let workerRun { return try workerRun.get() }
        let result: Result<(chunks: [SpeechChunk], steps: [ReplayRunner.Step]), Error>
        do {
            result = .success(try await speakerSpeech(try await shared().runner))
        } catch {
            result = .failure(error)
        }
        workerRun = result
        return try result.get()
    }

    /// Text -> Audio8Speaker -> audio through the worker, against `voxport speak`'s run of the
    /// same text and seed: the same pieces (text, ids), one chunk per codec window as Python
    /// emitted them, the stream within 1e-5 of its peak, and written as the CLI writes its
    /// wav, the CLI's samples within 1 LSB.
    func testAudio8SpeakerThroughTheWorkerGivesTheCLIsWav() async throws {
        let s = try await Self.shared()
        let kase = s.kase
        guard case .audio8(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: s.runner, verify: false) else {
            return XCTFail("not an Audio8Speaker")
        }
        XCTAssertGreaterThan(kase.pieces.count, 1, "the case should span more than one piece")
        let split = try speaker.pieces(kase.text, voice: nil)
        XCTAssertEqual(split.map(\.text), kase.pieces.map(\.text))
        XCTAssertEqual(split.map(\.ids), kase.pieces.map(\.ids))
        let chunks = try await Self.workerSpeech().chunks
        let perPiece = kase.pieces.map(\.windows_stream)
        XCTAssertEqual(chunks.map(\.text), zip(kase.pieces, perPiece).flatMap { Array(repeating: $0.text, count: $1) })
        XCTAssertEqual(chunks.map(\.piece), perPiece.enumerated().flatMap { Array(repeating: $0.offset, count: $0.element) })
        XCTAssertTrue(chunks.allSatisfy { $0.pieceCount == kase.pieces.count && $0.sampleRate == speaker.sampleRate })
        XCTAssertEqual(chunks.map(\.samples.count), kase.stream_chunks, "streamed chunks")
        let swift = chunks.flatMap(\.samples)
        assertClose(swift, try RawF32.read(s.dir.appendingPathComponent("stream.f32")), "speaker")
        try SpeakerParity.assertSameWav(swift, sampleRate: speaker.sampleRate, s.dir.appendingPathComponent("speak.wav"))
    }

    /// Empty text, only spaces, characters outside the tokenizer's words, a word past the KV
    /// rows, too many frames, a voice that leaves no room: the Speaker says what Python's front
    /// end says (its error's wording, or the same pieces), and nothing reaches a graph.
    func testBadTextGetsThePipelinesAnswerBeforeAnyGraphRuns() async throws {
        let s = try await Self.shared()
        let counter = CountingRunner(s.runner)
        guard case .audio8(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: counter, verify: false) else {
            return XCTFail("not an Audio8Speaker")
        }
        XCTAssertEqual(s.kase.bad.compactMap(\.error).count, 4, "Python refuses the empty and blank texts and both budgets")
        for bad in s.kase.bad {
            let voice = try bad.voice.map { try Audio8Voice.load(s.dir.appendingPathComponent($0)) }
            let what = "\(PythonRepr.string(String(bad.text.prefix(40)))), frames \(bad.max_frames ?? -1), voice \(bad.voice ?? "none")"
            if let error = bad.error {
                var options = speaker.makeOptions()
                options.maxFrames = bad.max_frames
                XCTAssertThrowsError(try speaker.speak(bad.text, voice: voice, options: options)) { e in
                    XCTAssertEqual("\(e)", error, what)
                }
            } else {
                let pieces = try speaker.pieces(bad.text, voice: voice, maxFrames: bad.max_frames)
                XCTAssertEqual(pieces.map(\.text), bad.pieces?.map(\.text), what)
                XCTAssertEqual(pieces.map(\.ids), bad.pieces?.map(\.ids), what)
            }
        }
        XCTAssertEqual(counter.calls, 0, "no graph ran")
    }

    /// `voxport-bench`'s library on the same worker: audio8.frame (the first piece's prefill and
    /// frame loop, cold pass only) writes result.json with the issue's figures.
    func testAudio8FrameBenchOnTheWorkerWritesItsResult() async throws {
        let s = try await Self.shared()
        let out = try TestScratch.folder("bench-audio8")
        let ids = s.kase.pieces[0].ids.map(String.init).joined(separator: ",")
        let env = try BenchEnvironment([
            "VP_BENCH": "audio8.frame", "VP_BUNDLE": s.kase.bundle, "VP_RUNNER": "worker", "VP_PASSES": "0", "VP_MAX_FRAMES": "12",
            "VP_SEED": String(s.kase.seed), "VP_TOKENS": ids, "VP_OUT": out.path,
        ])
        try await BenchDriver.run(env, runner: s.runner)
        let result = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
        XCTAssertEqual(result["bench"] as? String, "audio8.frame")
        let frames = try XCTUnwrap(result["frames"] as? Double)
        let prefill = try XCTUnwrap(result["prefill_calls"] as? Double)
        XCTAssertEqual(prefill, Double(s.kase.pieces[0].prefill_calls))
        XCTAssertGreaterThan(frames, 0)
        XCTAssertLessThanOrEqual(frames, 12, "VP_MAX_FRAMES")
        // one call per frame (an eos draw is a call that adds no frame) plus the prefill windows
        let calls = try XCTUnwrap(result["calls_per_pass"] as? Int)
        XCTAssertTrue([Int(prefill + frames), Int(prefill + frames) + 1].contains(calls), "calls_per_pass \(calls)")
        let medians = try XCTUnwrap(result["warm_median_ms"] as? [String: Double])
        XCTAssertEqual(Set(medians.keys), ["ar.prefill", "ar.frame"])
        for (k, v) in medians { XCTAssertGreaterThan(v, 0, k) }
        let seconds = try XCTUnwrap(result["audio_seconds"] as? Double)
        let codec = s.host.tables.codec
        XCTAssertEqual(seconds, frames * Double(codec.frameSize) / Double(codec.sampleRate), accuracy: 0.001)
        for key in ["load_ms", "first_call_ms", "rtf", "calls_per_audio_second", "ms_per_frame"] {
            XCTAssertGreaterThan(result[key] as? Double ?? 0, 0, key)
        }
        // result.json rounds both to 3 decimals: compare within 0.2 %.
        let perSecond = Double(calls) / seconds
        XCTAssertEqual(try XCTUnwrap(result["calls_per_audio_second"] as? Double), perSecond, accuracy: 2e-3 * perSecond)
        XCTAssertTrue(s.runner.isAlive, "the bench closed the injected worker")
    }
}
