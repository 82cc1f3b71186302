import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
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
/// before any graph runs; then Turbo's benches through `BenchDriver` on the same worker.
///
/// One worker serves the whole class; it starts as soon as the Python side says the bundle is
/// current, so its graph load overlaps the Python run.
final class ChatterboxTurboWorkerTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("chatterbox_turbo_case.py")

    typealias Shared = S3GenWorkerCase<ChatterboxTurboBundleFiles>

    static let made = MadeOnce<Shared>()

    static func shared() async throws -> Shared {
        try await made.get {
            try await Shared.start(script: script, scratch: "chatterbox-turbo-e2e") { try ChatterboxTurboBundleFiles.load($0) }
        }
    }

    override class func tearDown() {
        // Dropping the last reference ends the worker (WorkerProcess's deinit closes the child).
        made.reset()
        super.tearDown()
    }

    static func speaker(_ s: Shared, runner: GraphRunner) throws -> ChatterboxTurboSpeaker {
        guard case .chatterboxTurbo(let speaker) = try BundleSpeaker.open(s.bundle.url, runner: runner, verify: false) else {
            throw VoxportError(.user, "\(s.kase.bundle) did not open as a ChatterboxTurboSpeaker")
        }
        return speaker
    }

    /// Text -> ChatterboxTurboSpeaker -> audio through the worker, against Python's `speak` of
    /// the same text with the same draws (`S3GenWorkerCase.assertSpeech`): the audio within 2e-5
    /// of its peak (measured: 5.6e-6; the same T3 tokens, the flow's and HiFT's host sums
    /// ordered differently in the two hosts).
    func testChatterboxTurboSpeakerThroughTheWorkerGivesPythonsSpeech() async throws {
        let s = try await Self.shared()
        let speaker = try Self.speaker(s, runner: s.worker)
        XCTAssertEqual(speaker.model, "chatterbox_turbo")
        var options = speaker.makeOptions()
        options.draws = try RecordedChunkDraws(s.dir, count: s.kase.chunks.count)
        let chunks = try await SpeakerParity.collect(try speaker.speak(s.kase.text, voice: nil, options: options))
        try s.assertSpeech(split: try speaker.chunks(s.kase.text), chunks, bound: 2e-5, "chatterbox turbo speaker")
    }

    func testSwiftT3ThroughTheWorkerGivesPythonsTokensAndTheSilenceTail() async throws {
        let s = try await Self.shared()
        let host = try ChatterboxTurboPipeline(runner: s.worker, files: s.files)
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
            let error = try XCTUnwrap(bad.error, "Python refuses \(PythonRepr.string(bad.text))")
            XCTAssertThrowsError(try speaker.speak(bad.text)) { e in
                XCTAssertEqual("\(e)", error, PythonRepr.string(bad.text))
            }
        }
        XCTAssertEqual(counter.calls, 0, "no graph ran")
    }

    /// `bench` through `BenchDriver` on the class's worker (one cold pass), its result.json.
    func runBench(_ s: Shared, _ bench: String, _ vars: [String: String]) async throws -> [String: Any] {
        let out = s.dir.appendingPathComponent("bench-\(bench)")
        try? FileManager.default.removeItem(at: out)
        let env = try BenchEnvironment(vars.merging([
            "VP_BENCH": bench, "VP_BUNDLE": s.kase.bundle, "VP_RUNNER": "worker", "VP_PASSES": "0", "VP_OUT": out.path,
        ]) { $1 })
        try await BenchDriver.run(env, runner: s.worker)
        return try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
    }

    /// `chatterbox_turbo.t3` on the first chunk's ids draws what Turbo's T3 draws over the same
    /// worker from `VP_SEED`'s splitmix uniforms (6563 a draw: Chatterbox's 8194 would be
    /// refused), timing one prefill and the decode calls; `chatterbox_turbo.estimator` runs the
    /// publisher's mean-flow loop: 2 `flow_estimator` calls, each on one row (no CFG pair).
    func testTurboT3AndEstimatorBenchesRunTurbosLoops() async throws {
        let s = try await Self.shared()
        let ids = s.kase.chunks[0].ids.map(String.init).joined(separator: ",")
        let t3 = try await runBench(s, "chatterbox_turbo.t3", ["VP_TOKENS": ids, "VP_SEED": "5", "VP_MAX_TOKENS": "12"])
        XCTAssertEqual(t3["model"] as? String, "chatterbox_turbo")
        var options = ChatterboxTurboOptions()
        options.maxNewTokens = 12
        let host = try ChatterboxTurboPipeline(runner: s.worker, files: s.files)
        let direct = try await host.t3(textIDs: s.kase.chunks[0].ids, voice: s.files.defaultVoice!, options: options,
                                       uniforms: SplitMixDraws(seed: 5, vocab: ChatterboxTurboT3Tables.vocab).uniforms(chunk: 0))
        XCTAssertEqual(t3["tokens"] as? Double, Double(direct.tokens.count), "the bench's T3 is the host's, on VP_SEED's draws")
        XCTAssertEqual(t3["stopped"] as? Double, direct.stopped ? 1 : 0)
        let t3Medians = try XCTUnwrap(t3["warm_median_ms"] as? [String: Double])
        XCTAssertEqual(Set(t3Medians.keys.map { $0.hasPrefix("t3.prefill_P") ? "t3.prefill" : $0 }), ["t3.prefill", "t3.decode"])
        XCTAssertGreaterThan(t3["ms_per_token"] as? Double ?? 0, 0)

        let est = try await runBench(s, "chatterbox_turbo.estimator", ["VP_TOKENS": ids, "VP_SEED": "5", "VP_MAX_TOKENS": "12"])
        XCTAssertEqual(est["steps"] as? Double, 2, "the publisher's mean-flow: 2 steps")
        XCTAssertEqual(est["calls_per_pass"] as? Int, 2, "one flow_estimator call per step, nothing else timed")
        XCTAssertEqual(est["batch"] as? Double, 1, "mean-flow runs the cond row alone")
        let estMedians = try XCTUnwrap(est["warm_median_ms"] as? [String: Double])
        XCTAssertEqual(estMedians.keys.map { $0.hasPrefix("flow_estimator.estimate_F") }, [true])
        XCTAssertGreaterThan(est["estimator_ms_per_step"] as? Double ?? 0, 0)
    }

    /// `chatterbox_turbo.speak` with `VP_TEXT` speaks through ChatterboxTurboSpeaker's stream:
    /// the case's two chunks, and as many samples as the Speaker gives over the same worker with
    /// `VP_SEED`'s draws; `chatterbox_turbo.vocoder` writes HiFT's audio for the first chunk.
    func testTurboSpeakAndVocoderBenchesMakeTheSpeakersAudio() async throws {
        let s = try await Self.shared()
        let spoken = try await runBench(s, "chatterbox_turbo.speak", ["VP_TEXT": s.kase.text, "VP_SEED": "2", "VP_MAX_TOKENS": "4"])
        XCTAssertEqual(spoken["chunks"] as? Double, Double(s.kase.chunks.count))
        let speaker = try Self.speaker(s, runner: s.worker)
        var options = speaker.makeOptions()
        options.generation.maxNewTokens = 4
        options.draws = SplitMixDraws(seed: 2, vocab: ChatterboxTurboT3Tables.vocab)
        let chunks = try await SpeakerParity.collect(try speaker.speak(s.kase.text, voice: nil, options: options))
        let samples = chunks.reduce(0) { $0 + $1.samples.count }
        XCTAssertGreaterThan(samples, 0)
        XCTAssertEqual(spoken["audio_seconds"] as? Double ?? 0, Double(samples) / 24_000, accuracy: 0.001)
        XCTAssertLessThan(try XCTUnwrap(spoken["first_audio_ms"] as? Double), try XCTUnwrap(spoken["utterance_ms"] as? Double))
        let ids = s.kase.chunks[0].ids.map(String.init).joined(separator: ",")
        let vocoded = try await runBench(s, "chatterbox_turbo.vocoder", ["VP_TOKENS": ids, "VP_SEED": "2", "VP_MAX_TOKENS": "4"])
        XCTAssertGreaterThan(vocoded["frames"] as? Double ?? 0, 0)
        let wav = s.dir.appendingPathComponent("bench-chatterbox_turbo.vocoder/audio.wav")
        XCTAssertTrue(FileManager.default.fileExists(atPath: wav.path), "the vocoder's audio")
    }
}
