import Foundation
import VoxportCore
import VoxportRunner

/// Runs one bench as `VP_*` describe it and writes `result.json` (+ `audio.wav`) into `VP_OUT`.
///
/// Load time is opening the bundle (every hash verified; a text bench's few files only),
/// starting the runner and building the bench (host files read); the first pass is cold (first
/// calls compile/specialise), the others warm. Figures: load ms, first-call ms, each graph
/// function's warm median, runtime calls per audio second, RTF (median warm pass / audio
/// seconds), the host's own ms per audio second and, for a speaking bench, the time to its
/// first audio and to the utterance's end.
public enum BenchDriver {
    public static let resultFormat = "voxport-bench-result/1"

    /// Run and write; returns the result as written. `runner` replaces the one `VP_RUNNER` names
    /// (a test that already has a worker on the bundle; it is not closed here).
    @discardableResult
    public static func run(
        _ env: BenchEnvironment, runner given: GraphRunner? = nil, log: (String) -> Void = { _ in }
    ) async throws -> [String: Any] {
        let type = try BenchCatalog.type(named: env.bench)
        // The output folder first: an unwritable VP_OUT fails before minutes of work.
        try prepare(env.out)
        let loadStart = now()
        let bundle = try ModelBundle.open(env.bundle, verify: type.readsOnly == nil)
        guard bundle.manifest.model == type.model else {
            throw VoxportError(
                .user,
                "VP_BUNDLE \(env.bundle.path) holds a \(bundle.manifest.model) bundle; "
                    + "VP_BENCH=\(env.bench) needs a \(type.model) one")
        }
        if let files = type.readsOnly { try verify(files, of: bundle) }
        try type.checkText(env, bundle: bundle)
        // A bench that loads no graphs (`*.text`) starts no runner: no worker, no device load.
        let base: GraphRunner
        if type.loadsNoGraphs {
            base = GraphlessRunner(manifest: bundle.manifest, bench: env.bench)
        } else if let given {
            base = given
        } else {
            base = try await RunnerFactory.make(env, bundle: bundle, graphs: type.graphs)
        }
        let timing = TimedRunner(wrapping: base, keepingCalls: true)
        do {
            let result = try await measure(env, type: type, bundle: bundle, timing: timing, loadStart: loadStart, log: log)
            if given == nil || type.loadsNoGraphs { await timing.close() }
            return result
        } catch {
            if given == nil || type.loadsNoGraphs { await timing.close() }
            throw error
        }
    }

    /// Build the bench over `timing`, run its passes, write the result (the runner stays open).
    static func measure(
        _ env: BenchEnvironment, type: BenchCase.Type, bundle: ModelBundle, timing: TimedRunner, loadStart: Double,
        log: (String) -> Void
    ) async throws -> [String: Any] {
        let bench = try await type.init(bundle: bundle, runner: timing, environment: env)
        let loadMs = now() - loadStart
        log("\(env.bench): loaded in \(Int(loadMs)) ms (\(type.loadsNoGraphs ? "no runner" : env.runner.rawValue)); 1 cold + \(env.passes) warm passes")
        var passes: [(wall: Double, pass: BenchPass)] = []
        for p in 0...env.passes {
            timing.pass = p
            let start = now()
            let result = try await bench.pass(p)
            let wall = now() - start
            passes.append((wall, result))
            log("  pass \(p)\(p == 0 ? " (cold)" : ""): \(Int(wall)) ms for \(fmt(result.audioSeconds)) s of audio")
        }
        let result = summarize(env, bundle: bundle, type: type, timing: timing, loadMs: loadMs, passes: passes)
        try write(result, audio: passes.last!.pass, to: env.out)
        return result
    }

    static func summarize(
        _ env: BenchEnvironment, bundle: ModelBundle, type: BenchCase.Type, timing: TimedRunner, loadMs: Double,
        passes: [(wall: Double, pass: BenchPass)]
    ) -> [String: Any] {
        let warm = passes.count > 1 ? Array(passes.dropFirst()) : passes
        let seconds = warm.last!.pass.audioSeconds
        let wallMs = median(warm.map(\.wall))
        var out: [String: Any] = [
            "format": resultFormat, "bench": env.bench, "model": type.model, "precision": bundle.manifest.precision,
            "runner": type.loadsNoGraphs ? "none" : env.runner.rawValue,
            "runtime": type.loadsNoGraphs ? "none (the text front end only: no graph runs)" : RunnerFactory.runtime(env.runner), "units": env.units, "passes": env.passes, "seed": env.seed,
            "device": DeviceInfo.describe(), "load_ms": round3(loadMs),
            "first_call_ms": round3(timing.calls.first(where: { $0.pass == 0 })?.milliseconds ?? 0),
            "cold_pass_ms": round3(passes[0].wall), "warm_pass_ms": round3(wallMs),
            "warm_median_ms": timing.warmMedians().mapValues(round3),
            "calls_per_pass": timing.callCount(pass: passes.count - 1),
            "audio_seconds": round3(seconds),
            "peak_rss_mb": round3(DeviceInfo.peakResidentMB()),
        ]
        if seconds > 0 {
            out["rtf"] = round3(wallMs / 1000 / seconds)
            out["calls_per_audio_second"] = round3(Double(timing.callCount(pass: passes.count - 1)) / seconds)
            let host = warm.compactMap { $0.pass.hostMilliseconds }
            if !host.isEmpty { out["host_ms_per_audio_second"] = round3(median(host) / seconds) }
        }
        for (k, v) in warm.last!.pass.extra { out[k] = round3(v) }
        out.merge(speechFigures(passes.map(\.pass), warm: warm.map(\.pass))) { $1 }
        return out
    }

    /// A speaking bench's stream figures: the cold pass's and the warm passes' median time to
    /// the first audio and to the utterance's end (`VP_PASSES=0`: the cold pass is the warm one).
    static func speechFigures(_ passes: [BenchPass], warm: [BenchPass]) -> [String: Any] {
        guard let cold = passes.first?.speech else { return [:] }
        var out: [String: Any] = ["cold_utterance_ms": round3(cold.utteranceMilliseconds)]
        if let first = cold.firstAudioMilliseconds { out["cold_first_audio_ms"] = round3(first) }
        let timings = warm.compactMap(\.speech)
        out["utterance_ms"] = round3(median(timings.map(\.utteranceMilliseconds)))
        let firsts = timings.compactMap(\.firstAudioMilliseconds)
        if !firsts.isEmpty { out["first_audio_ms"] = round3(median(firsts)) }
        return out
    }

    /// The hashes of the only host files a bench reads (the bundle was checked closed at open):
    /// a text bench need not hash the graphs it never loads, gigabytes on a real bundle.
    /// A text bench's files, each hashed (a folder, Kokoro's `g2p/`, by its content hash). One
    /// the manifest does not list is left to the bench's `checkText`, which names the fix (a
    /// Kokoro bundle from before `g2p/`: re-export).
    static func verify(_ files: [String], of bundle: ModelBundle) throws {
        for name in files where bundle.manifest.files[name] != nil { try bundle.verifyFile(name) }
    }

    static func prepare(_ dir: URL) throws {
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        } catch {
            throw VoxportError(.user, "VP_OUT \(dir.path) cannot be created: \(error.localizedDescription)")
        }
        guard FileManager.default.isWritableFile(atPath: dir.path) else {
            throw VoxportError(.user, "VP_OUT \(dir.path) is not writable: choose another folder")
        }
    }

    static func write(_ result: [String: Any], audio: BenchPass, to dir: URL) throws {
        if !audio.audio.isEmpty {
            try WavWriter.writePCM16(audio.audio, sampleRate: audio.sampleRate, to: dir.appendingPathComponent("audio.wav"))
        }
        let data = try JSONSerialization.data(withJSONObject: result, options: [.prettyPrinted, .sortedKeys])
        do {
            try (data + Data("\n".utf8)).write(to: dir.appendingPathComponent("result.json"), options: .atomic)
        } catch {
            throw VoxportError(.io, "cannot write \(dir.path)/result.json: \(error.localizedDescription)")
        }
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e6 }
    static func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
    static func fmt(_ x: Double) -> String { String(format: "%.2f", x) }
}
