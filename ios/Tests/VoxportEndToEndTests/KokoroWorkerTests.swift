import Foundation
import XCTest
import VoxportBench
import VoxportCore
import VoxportDSP
import VoxportHost
import VoxportRunner

/// The whole Swift Kokoro host through the real Core AI runtime (WorkerRunner -> `voxport serve`)
/// on the reduced real-weight bundle, against the Python pipeline on the same bundle and draws
/// (`kokoro_case.py make`): the waveform within 1e-4 of the Python one's peak, every sample
/// compared (the edges are where a replicate-for-reflect STFT pad shows), and the same Whisper
/// WER through `gates.asr`. Both hosts fold the source's -π phases to +π for the waveform
/// comparison (`HarmonicSource.foldingNegativePi` says why); one worker serves every test.
final class KokoroWorkerTests: XCTestCase {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = repo.appendingPathComponent(".venv/bin/python")
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("kokoro_case.py")

    struct Case: Decodable {
        struct Chunk: Decodable {
            let phonemes: String
            let ids: [Int32]
            let seed: Int
        }
        let bundle: String
        let text: String
        let voice: String
        let chunks: [Chunk]
        let samples: Int
        let transcript: String
        let wer: Double
        let folding_moves: Double
    }

    struct Draws: SourceNoise {
        let bySeed: [Int: SourceDraws]
        func draws(frames: Int, seed: Int) -> SourceDraws { bySeed[seed]! }
    }

    /// Python's answers, made once per test process (the export, when needed, and a Python run),
    /// and the one worker every test uses.
    nonisolated(unsafe) static var made: (dir: URL, kase: Case)?
    nonisolated(unsafe) static var shared: WorkerRunner?

    static func worker(_ kase: Case) throws -> WorkerRunner {
        if let shared { return shared }
        let w = try WorkerRunner(bundle: URL(fileURLWithPath: kase.bundle), graphs: KokoroHost.graphs)
        shared = w
        return w
    }

    override class func tearDown() {
        shared?.close()
        shared = nil
        super.tearDown()
    }

    static func draws(_ dir: URL, seed: Int) throws -> SourceDraws {
        let z = try NpzArchive.load(dir.appendingPathComponent("noise\(seed).npz"))
        return SourceDraws(randIni: try z.array("rand_ini").float32(), sineNoise: try z.array("sine_noise").float32())
    }

    static func relativeError(_ a: [Float], _ reference: [Float]) -> Double {
        let peak = reference.map { abs($0) }.max() ?? 0
        let worst = zip(a, reference).map { abs($0 - $1) }.max() ?? .infinity
        return Double(worst / peak)
    }

    static func python(_ args: [String]) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw VoxportError(.user, "no \(python.path): run `make setup` at the repository root first")
        }
        let p = Process()
        p.executableURL = python
        p.arguments = [script.path] + args
        p.currentDirectoryURL = repo
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw VoxportError(.user, "kokoro_case.py \(args[0]) failed: \(String(decoding: stderr.suffix(3000), as: UTF8.self))")
        }
        return String(decoding: stdout, as: UTF8.self)
    }

    static func pythonCase() throws -> (dir: URL, kase: Case) {
        if let made { return made }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("voxport-kokoro-e2e-\(getpid())")
        _ = try python(["make", dir.path])
        let kase = try JSONDecoder().decode(Case.self, from: Data(contentsOf: dir.appendingPathComponent("case.json")))
        made = (dir, kase)
        return (dir, kase)
    }

    func testSwiftHostThroughTheWorkerGivesThePythonWaveformAndWER() throws {
        let (dir, kase) = try Self.pythonCase()
        let bundle = try ModelBundle.open(URL(fileURLWithPath: kase.bundle))
        let files = try KokoroBundleFiles.load(bundle)
        let host = try KokoroHost(runner: try Self.worker(kase), vocab: files.vocab, source: files.source)
        host.foldNegativePi = true
        let voice = try files.voices.voice(kase.voice)
        var draws: [Int: SourceDraws] = [:]
        for c in kase.chunks { draws[c.seed] = try Self.draws(dir, seed: c.seed) }
        var chunkAudio: [[Float]] = []
        for c in kase.chunks {
            // Python's chunk, re-chunked by the Swift host from its phonemes: the same ids.
            XCTAssertEqual(try host.chunks(c.phonemes).map(\.ids), [c.ids])
            let (audio, results) = try host.speak(c.phonemes, voice: voice, noise: Draws(bySeed: draws), seed: c.seed)
            XCTAssertEqual(results.count, 1)
            chunkAudio.append(audio)
        }
        let swift = KokoroAudio.join(chunkAudio)
        let folded = try RawF32.read(dir.appendingPathComponent("folded.f32"))
        let asIs = try RawF32.read(dir.appendingPathComponent("python.f32"))
        XCTAssertEqual(swift.count, kase.samples)
        XCTAssertEqual(folded.count, kase.samples)
        XCTAssertGreaterThan(folded.map { abs($0) }.max() ?? 0, 0.01, "the Python audio is silent: nothing to compare")
        let error = Self.relativeError(swift, folded)
        print("kokoro e2e: max|Δ|/max|ref| \(error) (folded); \(Self.relativeError(swift, asIs)) against the unfolded "
            + "Python audio; folding alone moves Python's by \(kase.folding_moves)")
        XCTAssertLessThanOrEqual(error, 1e-4, "max|Δ|/max|ref| over every sample")

        let wav = dir.appendingPathComponent("swift.wav")
        try WavWriter.writeFloat32(swift, sampleRate: KokoroAudio.sampleRate, to: wav)
        let asr = try JSONSerialization.jsonObject(with: Data(try Self.python(["wer", wav.path]).utf8)) as! [String: Any]
        XCTAssertEqual(asr["wer"] as? Double, kase.wer, "Swift transcript \(asr["transcript"] ?? "") vs Python \(kase.transcript)")
    }

    /// The check above can fail: the same host with the harmonic source's STFT padded by
    /// replicate instead of reflect (the public community Swift host's mistake) moves the
    /// waveform beyond the 1e-4 bar.
    func testAReplicatePadInTheSourceSTFTFailsTheBar() throws {
        let (dir, kase) = try Self.pythonCase()
        let bundle = try ModelBundle.open(URL(fileURLWithPath: kase.bundle))
        let files = try KokoroBundleFiles.load(bundle)
        let host = try KokoroHost(runner: try Self.worker(kase), vocab: files.vocab, source: files.source)
        let c = kase.chunks[0]
        let refS = try files.voices.voice(kase.voice).row(nPhonemes: try host.chunks(c.phonemes)[0].nPhonemes)
        let pred = try host.predictor(ids: c.ids, refS: refS)
        let predDur = try Durations.predDurations(pred.duration, speed: 1.0)
        let pros = try host.prosody(d: pred.d, tEn: pred.tEn, predDur: predDur, refS: refS)
        let source = files.source
        let excitation = try source.excitation(f0: pros.f0, draws: try Self.draws(dir, seed: c.seed))
        let spec = try Spectral.stft(
            excitation, nFFT: source.config.nFFT, hop: source.config.hop, winLength: source.config.nFFT,
            window: Windows.hann(source.config.nFFT), padMode: .replicate)
        let (mag, phase) = Spectral.magnitudePhase(spec)
        let har = source.foldingNegativePi((mag + phase, spec.frames))
        let audio = try host.vocoder(
            asr: pros.asr, f0: pros.f0, n: pros.n, har: har.values, harFrames: har.frames, refS: refS)
        let folded = try RawF32.read(dir.appendingPathComponent("folded.f32"))
        XCTAssertEqual(kase.chunks.count, 1, "the case is one chunk: its audio is the whole reference")
        XCTAssertEqual(audio.count, folded.count)
        let error = Self.relativeError(audio, folded)
        print("kokoro e2e: a replicate pad moves the waveform by \(error) of its peak")
        XCTAssertGreaterThan(error, 1e-4, "a replicate pad went unnoticed")
    }

    /// `voxport-bench`'s library end to end: kokoro.speak through the worker writes result.json
    /// (every figure the issue lists) and audio.wav.
    func testKokoroSpeakBenchWritesItsResult() throws {
        let (_, kase) = try Self.pythonCase()
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("voxport-bench-\(getpid())")
        try? FileManager.default.removeItem(at: out)
        let env = try BenchEnvironment([
            "VP_BENCH": "kokoro.speak", "VP_BUNDLE": kase.bundle, "VP_RUNNER": "worker", "VP_PASSES": "0",
            "VP_PHONEMES": kase.chunks[0].phonemes, "VP_OUT": out.path,
        ])
        try BenchDriver.run(env, runner: try Self.worker(kase))
        let result = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
        XCTAssertEqual(result["bench"] as? String, "kokoro.speak")
        XCTAssertEqual(result["calls_per_pass"] as? Int, 3, "predictor, prosody, vocoder for one chunk")
        let medians = result["warm_median_ms"] as! [String: Double]
        XCTAssertEqual(Set(medians.keys.map { String($0.split(separator: ".")[0]) }), Set(KokoroHost.graphs))
        for key in ["load_ms", "first_call_ms", "rtf", "calls_per_audio_second", "host_ms_per_audio_second"] {
            XCTAssertGreaterThan(result[key] as? Double ?? 0, 0, key)
        }
        XCTAssertNotNil((result["device"] as? [String: Any])?["os"])
        let wav = try Data(contentsOf: out.appendingPathComponent("audio.wav"))
        let seconds = result["audio_seconds"] as! Double
        XCTAssertEqual(Double(wav.count - 44) / 2 / 24_000, seconds, accuracy: 0.001)
    }
}
