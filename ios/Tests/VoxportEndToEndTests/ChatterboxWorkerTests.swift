import Foundation
import Synchronization
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// The Swift Chatterbox host through the real Core AI runtime (WorkerRunner -> `voxport serve`)
/// on the whole reduced random-weight bundle (`bundles/chatterbox-fp32-reduced-seed0`, the one
/// CoreAIRunnerParityTests uses), against the Python pipeline on the same bundle
/// (`chatterbox_case.py make`: `speak` of two sentences, its draws recorded per chunk):
/// ChatterboxSpeaker (`BundleSpeaker.open` over the worker, its own front end on the bundle's
/// tokenizer.json) gives Python's chunks, ids and audio for the same text and draws; T3's tokens
/// (and the speech tokens drop_invalid_tokens keeps) equal Python's for Python's uniforms; bad
/// text gets the pipeline's answer; then `chatterbox.t3` through `BenchDriver` on the same
/// worker, and bad bench input.
///
/// One worker serves the whole class; it starts as soon as the Python side says the bundle is
/// current, so its graph load overlaps the Python run.
final class ChatterboxWorkerTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("chatterbox_case.py")

    typealias Shared = S3GenWorkerCase<ChatterboxBundleFiles>

    static let made = MadeOnce<Shared>()
    /// Python's answers (and the host files), kept for the whole process where the worker goes
    /// with the class: CoreAIRunnerParityTests holds its own Speaker run against them and the
    /// worker's run (`workerRun`) after this class is done.
    nonisolated(unsafe) static var python: (dir: URL, kase: S3GenCase, bundle: ModelBundle, files: ChatterboxBundleFiles)?

    static func pythonCase() async throws -> (dir: URL, kase: S3GenCase, bundle: ModelBundle, files: ChatterboxBundleFiles) {
        if let python { return python }
        let s = try await shared()
        return (s.dir, s.kase, s.bundle, s.files)
    }

    /// Python's answers and the class's worker, made once: the Python case runs while the worker
    /// loads.
    static func shared() async throws -> Shared {
        try await made.get {
            let s = try await Shared.start(script: script, scratch: "chatterbox-e2e") { try ChatterboxBundleFiles.load($0) }
            python = (s.dir, s.kase, s.bundle, s.files)
            return s
        }
    }

    override class func tearDown() {
        // A class tearDown cannot await `close()`: dropping the last reference ends the worker
        // (its WorkerProcess's deinit closes the child and waits for it to exit).
        made.reset()
        super.tearDown()
    }

    /// What ChatterboxSpeaker (from `BundleSpeaker.open` over `runner`) says for the case's
    /// text with Python's recorded draws and `voxport speak`'s default options; every graph call
    /// recorded.
    static func speakerSpeech(_ runner: GraphRunner) async throws -> (chunks: [SpeechChunk], steps: [ReplayRunner.Step]) {
        let s = try await pythonCase()
        let recorder = RecordingRunner(wrapping: runner)
        guard case .chatterbox(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: recorder, verify: false) else {
            throw VoxportError(.user, "\(s.kase.bundle) did not open as a ChatterboxSpeaker")
        }
        var options = speaker.makeOptions()
        options.draws = try RecordedChunkDraws(s.dir, count: s.kase.chunks.count)
        let chunks = try await SpeakerParity.collect(try speaker.speak(s.kase.text, voice: nil, options: options))
        return (chunks, recorder.steps)
    }

    /// The Speaker over the class's host files, already loaded (opening the bundle again reads
    /// them again: seconds); `speakerSpeech` opens it through `BundleSpeaker.open`.
    static func speaker(_ s: Shared, runner: GraphRunner) throws -> ChatterboxSpeaker {
        try ChatterboxSpeaker(runner: runner, files: s.files,
                              tokenizer: try Tokenizer(contentsOf: try s.bundle.fileURL(ChatterboxSpeaker.tokenizerFile)))
    }

    nonisolated(unsafe) static var workerRun: Result<(chunks: [SpeechChunk], steps: [ReplayRunner.Step]), Error>?

    /// `speakerSpeech` over the class's worker, once per test process (CoreAIRunnerParityTests
    /// holds CoreAIRunner's speech against the same run).
    static func workerSpeech() async throws -> (chunks: [SpeechChunk], steps: [ReplayRunner.Step]) {
        if let workerRun { return try workerRun.get() }
        let result: Result<(chunks: [SpeechChunk], steps: [ReplayRunner.Step]), Error>
        do {
            result = .success(try await speakerSpeech(try await shared().worker))
        } catch {
            result = .failure(error)
        }
        workerRun = result
        return try result.get()
    }

    /// Text -> ChatterboxSpeaker -> audio through the worker, against Python's `speak` of the
    /// same text with the same draws (`S3GenWorkerCase.assertSpeech`): the audio within 3e-5 of
    /// its peak (measured: 2.1e-5; the same T3 tokens, the flow's and HiFT's host float sums
    /// ordered differently in the two hosts).
    func testChatterboxSpeakerThroughTheWorkerGivesPythonsSpeech() async throws {
        let s = try await Self.shared()
        let speaker = try Self.speaker(s, runner: s.worker)
        try s.assertSpeech(split: try speaker.chunks(s.kase.text), try await Self.workerSpeech().chunks, bound: 3e-5, "chatterbox speaker")
    }

    /// Empty text, only spaces, characters the tokenizer does not know, a word longer than the
    /// text budget: the Speaker says what Python's front end says (its error's wording, or the
    /// same chunks), and nothing reaches a graph.
    func testBadTextGetsThePipelinesAnswerBeforeAnyGraphRuns() async throws {
        let s = try await Self.shared()
        let counter = CountingRunner(s.worker)
        let speaker = try Self.speaker(s, runner: counter)
        XCTAssertEqual(s.kase.bad.compactMap(\.error).count, 2, "Python refuses the empty and the blank text")
        for bad in s.kase.bad {
            if let error = bad.error {
                XCTAssertThrowsError(try speaker.speak(bad.text)) { e in
                    XCTAssertEqual("\(e)", error, PythonRepr.string(bad.text))
                }
            } else {
                let chunks = try speaker.chunks(bad.text)
                XCTAssertEqual(chunks.map(\.text), bad.chunks?.map(\.text), PythonRepr.string(bad.text))
                XCTAssertEqual(chunks.map(\.ids), bad.chunks?.map(\.ids), PythonRepr.string(bad.text))
            }
        }
        XCTAssertEqual(counter.calls, 0, "no graph ran")
    }

    func testSwiftHostThroughTheWorkerGivesPythonsT3Tokens() async throws {
        let s = try await Self.shared()
        let host = try ChatterboxPipeline(runner: s.worker, files: s.files)
        var options = ChatterboxOptions()
        options.exaggeration = 0.5  // SpeakOptions' default, which the Python side spoke with
        let first = s.kase.chunks[0]
        let rows = try RecordedChunkDraws(s.dir, count: 1).chunks[0].rows
        XCTAssertEqual(rows.count, first.stopped ? first.tokens.count + 1 : first.tokens.count, "one uniform row per draw")
        let r = try await host.t3(textIDs: first.ids, voice: s.files.defaultVoice!, options: options, uniforms: RecordedUniforms(rows))
        XCTAssertEqual(r.tokens, first.tokens, "T3 tokens for Python's uniforms")
        XCTAssertEqual(r.stopped, first.stopped)
        let speech = SpeechTokens.dropInvalid(r.tokens)
        XCTAssertEqual(speech, first.speech_tokens, "drop_invalid_tokens")
        // The calibrated random T3 (issue 20) draws speech ids and ends on its own stop token, so
        // this case exercises the stop path; drop_invalid_tokens over invalid ids is held by
        // ChatterboxSamplingTests' fixture cases.
        XCTAssertTrue(r.stopped, "the case ends on T3's own stop token")
        print("chatterbox e2e: \(r.tokens.count) T3 tokens through the worker")
    }

    /// `voxport-bench`'s library end to end on the same worker: chatterbox.t3 with VP_TOKENS as
    /// the ids of Python's chunk writes result.json with the driver's and the bench's figures.
    func testChatterboxT3BenchWritesItsResult() async throws {
        let s = try await Self.shared()
        let out = s.dir.appendingPathComponent("bench-t3")
        try? FileManager.default.removeItem(at: out)
        let env = try BenchEnvironment([
            "VP_BENCH": "chatterbox.t3", "VP_BUNDLE": s.kase.bundle, "VP_RUNNER": "worker", "VP_PASSES": "0",
            "VP_SEED": "5", "VP_TOKENS": s.kase.chunks[0].ids.map(String.init).joined(separator: ","), "VP_OUT": out.path,
        ])
        try await BenchDriver.run(env, runner: s.worker)
        let result = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
        XCTAssertEqual(result["bench"] as? String, "chatterbox.t3")
        XCTAssertEqual(result["model"] as? String, "chatterbox")
        XCTAssertEqual(result["seed"] as? Int, 5)
        let tokens = try XCTUnwrap(result["tokens"] as? Double)
        let stopped = (result["stopped"] as? Double) == 1
        XCTAssertGreaterThan(tokens, 0)
        XCTAssertEqual(result["audio_seconds"] as? Double ?? 0, tokens / 25, accuracy: 0.001, "speech tokens at 25 Hz")
        // one prefill, then one decode call per token fed back (the last is not, unless it stopped)
        XCTAssertEqual(result["calls_per_pass"] as? Int, Int(tokens) + (stopped ? 1 : 0))
        let medians = try XCTUnwrap(result["warm_median_ms"] as? [String: Double])
        XCTAssertEqual(Set(medians.keys), ["t3.prefill_P96", "t3.decode"])
        for key in ["load_ms", "first_call_ms", "rtf", "calls_per_audio_second", "host_ms_per_audio_second",
                    "ms_per_token", "prefill_ms", "t3_ms"] {
            XCTAssertGreaterThan(result[key] as? Double ?? 0, 0, key)
        }
        let perToken = result["ms_per_token"] as! Double
        XCTAssertEqual(perToken, medians["t3.decode"]!, accuracy: max(1, 0.5 * perToken), "ms_per_token is the decode call's time")
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.appendingPathComponent("audio.wav").path), "T3 makes no audio")
    }

    /// Bad bench input is a user error from the bench's init, before any graph runs.
    func testBadBenchInputFailsBeforeAnyGraphRuns() async throws {
        let s = try await Self.shared()
        let counter = CountingRunner(s.worker)
        let base = ["VP_BUNDLE": s.kase.bundle, "VP_RUNNER": "worker"]
        let bad = s.dir.appendingPathComponent("not-a-voice.npz")
        try Data("not a zip".utf8).write(to: bad)
        let cases: [(BenchCase.Type, [String: String], String)] = [
            (ChatterboxSpeakBench.self, [:], "needs VP_TOKENS"),
            (ChatterboxT3Bench.self, ["VP_TOKENS": "255,40,0", "VP_VOICE": bad.path], "cannot be read"),
            (ChatterboxEstimatorBench.self, ["VP_TOKENS": "255,40,0", "VP_VOICE": "/nonexistent/voice.npz"], "no such file"),
        ]
        for (type, vars, message) in cases {
            let env = try BenchEnvironment(base.merging(vars) { $1 }.merging(["VP_BENCH": type.name]) { $1 })
            await assertThrowsAsync({ try await type.init(bundle: s.bundle, runner: counter, environment: env) }) { e in
                XCTAssertEqual((e as? VoxportError)?.kind, .user, "\(type.name): \(e)")
                XCTAssertTrue("\(e)".contains(message), "\(type.name): \(e)")
            }
        }
        XCTAssertEqual(counter.calls, 0, "no graph ran")
    }
}

/// Counts the calls it passes on.
final class CountingRunner: GraphRunner {
    let base: GraphRunner
    private let count = Mutex(0)
    var calls: Int { count.withLock { $0 } }
    init(_ base: GraphRunner) { self.base = base }
    var manifest: Manifest { base.manifest }
    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        count.withLock { $0 += 1 }
        return try await base.run(graph: graph, function: function, inputs: inputs, state: state)
    }
    func resetState(graph: String, state: String) async throws {
        count.withLock { $0 += 1 }
        try await base.resetState(graph: graph, state: state)
    }
    func close() async { await base.close() }
}
