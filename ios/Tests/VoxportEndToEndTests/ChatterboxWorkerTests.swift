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

    struct Case: Decodable {
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

    struct Shared {
        let dir: URL
        let kase: Case
        let bundle: ModelBundle
        let files: ChatterboxBundleFiles
        let worker: WorkerRunner
    }

    nonisolated(unsafe) static var made: Result<Shared, Error>?
    /// Python's answers (and the host files), kept for the whole process where the worker goes
    /// with the class: CoreAIRunnerParityTests holds its own Speaker run against them and the
    /// worker's run (`workerRun`) after this class is done.
    nonisolated(unsafe) static var python: (dir: URL, kase: Case, bundle: ModelBundle, files: ChatterboxBundleFiles)?

    static func pythonCase() async throws -> (dir: URL, kase: Case, bundle: ModelBundle, files: ChatterboxBundleFiles) {
        if let python { return python }
        let s = try await shared()
        return (s.dir, s.kase, s.bundle, s.files)
    }

    /// Python's answers and the class's worker, made once: the Python case runs while the worker
    /// loads (the export, when the bundle is missing, comes first).
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
        let t0 = DispatchTime.now().uptimeNanoseconds
        let dir = try TestScratch.folder("chatterbox-e2e")
        let child = try PythonChild.start(script, ["make", dir.path], log: dir.appendingPathComponent("python.log"))
        func failure(_ what: String) -> VoxportError { child.failure(what) }
        // The first stdout line: the bundle, current (exported first when it was not).
        guard let line = child.firstLine(), let first = String(decoding: line, as: UTF8.self).split(separator: "\n").first
        else {
            child.process.waitUntilExit()
            throw failure("failed before naming its bundle")
        }
        let tBundle = seconds(since: t0)
        // The Python side has just checked the bundle is current, and the worker verifies it as
        // it loads; the host tables load here while the worker loads its graphs.
        let bundle: ModelBundle
        let worker: WorkerRunner
        let loadedFiles: Result<ChatterboxBundleFiles, Error>
        do {
            let opened = try ModelBundle.open(URL(fileURLWithPath: String(first)), verify: false)
            bundle = opened
            // A child task reads the tables while this one awaits the worker (leaving the scope
            // early, on a failed start, awaits the child task first).
            async let tables = Result { try ChatterboxBundleFiles.load(opened) }
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
            throw failure("failed (exit \(status))")
        }
        let kase = try JSONDecoder().decode(Case.self, from: Data(contentsOf: dir.appendingPathComponent("case.json")))
        print(String(format: "chatterbox e2e: bundle current after %.1f s, worker and host tables ready after %.1f s, Python case done after %.1f s",
                     tBundle, tWorker, seconds(since: t0)))
        python = (dir, kase, bundle, files)
        return Shared(dir: dir, kase: kase, bundle: bundle, files: files, worker: worker)
    }

    static func seconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9 }

    override class func tearDown() {
        // A class tearDown cannot await `close()`: dropping the last reference ends the worker
        // (its WorkerProcess's deinit closes the child and waits for it to exit).
        made = nil
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
    /// same text with the same draws: the chunks' text (after punc_norm) and ids, the stream,
    /// each chunk's length, and the audio within 3e-5 of its peak (measured: 2.1e-5; the same
    /// T3 tokens, the flow's and HiFT's host float sums ordered differently in the two hosts).
    func testChatterboxSpeakerThroughTheWorkerGivesPythonsSpeech() async throws {
        let s = try await Self.shared()
        let speaker = try Self.speaker(s, runner: s.worker)
        XCTAssertGreaterThan(s.kase.chunks.count, 1, "the case should span more than one chunk")
        let split = try speaker.chunks(s.kase.text)
        XCTAssertEqual(split.map(\.text), s.kase.chunks.map(\.text), "punc_norm and the split")
        XCTAssertEqual(split.map(\.ids), s.kase.chunks.map(\.ids), "the tokenizer")
        let chunks = try await Self.workerSpeech().chunks
        XCTAssertEqual(chunks.map(\.text), s.kase.chunks.map(\.text))
        XCTAssertEqual(chunks.map(\.piece), Array(s.kase.chunks.indices))
        XCTAssertTrue(chunks.allSatisfy { $0.pieceCount == s.kase.chunks.count && $0.sampleRate == 24_000 })
        XCTAssertEqual(chunks.map(\.samples.count), s.kase.chunks.map(\.samples), "each chunk's samples")
        let python = try RawF32.read(s.dir.appendingPathComponent("audio.f32"))
        let swift = chunks.flatMap(\.samples)
        XCTAssertEqual(swift.count, s.kase.samples)
        XCTAssertGreaterThan(python.map { abs($0) }.max() ?? 0, 1e-3, "the Python audio is silent: nothing to compare")
        let error = SpeakerParity.relativeError(swift, python)
        print("chatterbox speaker e2e: \(chunks.count) chunks, \(swift.count) samples, max|Δ|/max|ref| \(error)")
        XCTAssertLessThanOrEqual(error, 3e-5, "max|Δ|/max|ref| over every sample")
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
