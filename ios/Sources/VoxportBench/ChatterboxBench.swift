import Foundation
import Synchronization
import VoxportCore
import VoxportHost
import VoxportRunner

/// What the Chatterbox benches share: the host over the bundle (through a clock), the chunks'
/// ids — `VP_TOKENS` (the chunks of `voxport tokenize chatterbox "TEXT"`) or `VP_TEXT` through
/// the Speaker's front end (the bundle's tokenizer.json) — `VP_VOICE` (a file from `voxport
/// voice chatterbox`; unset: the bundle's `voice_default.npz`) and the seeded draws of `VP_SEED`
/// (splitmix, not numpy's or torch's generators: a device run, not a replay). Every input is
/// checked here, before a graph runs.
struct ChatterboxBenchInputs {
    static let tokenRate = 25.0  // speech tokens per second
    static let melRate = 50.0  // mel frames per second

    let host: ChatterboxPipeline
    let clock: TimedRunner
    let chunks: [[Int32]]
    /// `VP_TEXT` and the Speaker that says it (over the clock), when the text was given.
    let text: String?
    let speaker: ChatterboxSpeaker?
    let voice: ChatterboxVoice
    let options: ChatterboxOptions
    let draws: SplitMixDraws
    /// The runner below the bench's timing (the one stages run on at load, untimed).
    let untimed: GraphRunner

    init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment, bench: String) throws {
        guard env.tokens?.isEmpty == false || env.text != nil else {
            throw VoxportError(
                .user, "\(bench) needs VP_TOKENS (the output of `voxport tokenize chatterbox \"TEXT\"`) or VP_TEXT (the text itself)")
        }
        // a voice file first (cheap), then the host tables (the T3 table is the bundle's biggest file)
        let given = try env.voice.map { try Self.voiceFile($0, bundle: bundle) }
        let files = try ChatterboxBundleFiles.load(bundle)
        guard let voice = given ?? files.defaultVoice else {
            throw VoxportError(
                .user, "the bundle has no default voice (\(ChatterboxVoice.defaultFileName)): set VP_VOICE to a file from `voxport voice chatterbox`")
        }
        self.voice = voice
        clock = TimedRunner(wrapping: runner)
        host = try ChatterboxPipeline(runner: clock, files: files)
        text = env.text
        if let text = env.text {
            let speaker = try ChatterboxSpeaker(runner: clock, files: files, tokenizer: try BenchText.tokenizer(bundle))
            self.speaker = speaker
            chunks = try BenchText.frontEnd { try speaker.chunks(text) }.map(\.ids)
        } else {
            speaker = nil
            chunks = (env.tokens ?? []).map { $0.map { Int32(clamping: $0) } }
        }
        var options = ChatterboxOptions()
        options.maxNewTokens = env.maxTokens
        self.options = options
        draws = SplitMixDraws(seed: env.seed)
        untimed = (runner as? TimedRunner)?.base ?? runner
        // a bad id, an over-long chunk or a bad voice fails here, before any graph runs
        let cond = try voice.condEmb(exaggeration: options.exaggeration)
        let source = env.text != nil ? "VP_TEXT" : "VP_TOKENS"
        for (i, ids) in chunks.enumerated() {
            do {
                let (_, rows) = try files.t3.prefillEmbeds(condEmb: cond, textIDs: ids)
                _ = try host.decoder.checkFits(rows: rows, maxNewTokens: options.maxNewTokens ?? host.speechBudget)
            } catch let e as VoxportError {
                throw VoxportError(e.kind == .bucketOverflow ? .bucketOverflow : .user, "\(source) chunk \(i): \(e.message)")
            }
        }
    }

    /// `VP_VOICE`: a voice file (`voxport voice chatterbox`) or a file of the bundle by name.
    static func voiceFile(_ spec: String, bundle: ModelBundle) throws -> ChatterboxVoice {
        var url = URL(fileURLWithPath: spec)
        if !FileManager.default.fileExists(atPath: url.path) {
            guard bundle.manifest.files[spec] != nil else {
                throw VoxportError(.user, "VP_VOICE \(spec): no such file (make one with `voxport voice chatterbox --ref WAV -o voice.npz`)")
            }
            url = try bundle.fileURL(spec)
        }
        return try ChatterboxVoice.load(url)
    }

    /// T3 for chunk `i` with the seeded uniforms.
    func t3(chunk i: Int, on h: ChatterboxPipeline? = nil) async throws -> T3Result {
        try await (h ?? host).t3(textIDs: chunks[i], voice: voice, options: options, uniforms: draws.uniforms(chunk: i))
    }

    /// A host over the untimed runner, for the stages a bench needs done once at load.
    func untimedHost() throws -> ChatterboxPipeline { try ChatterboxPipeline(runner: untimed, files: host.files) }

    /// The first chunk's speech tokens (T3 once, untimed), or a user error when it drew none.
    func speechTokens(on h: ChatterboxPipeline, bench: String) async throws -> [Int] {
        let speech = SpeechTokens.dropInvalid(try await t3(chunk: 0, on: h).tokens)
        guard !speech.isEmpty else {
            throw VoxportError(.user, "\(bench): T3 drew no speech tokens for the first chunk with VP_SEED=\(draws.seed): try another seed")
        }
        return speech
    }

    static func milliseconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6 }
}

/// `chatterbox.t3`: the first chunk's T3 loop (prefill, one decode call per token, CFG and
/// sampling on the host). `ms_per_token` is the decode calls' graph time per call.
public final class ChatterboxT3Bench: BenchCase {
    public static let name = "chatterbox.t3"
    public static let model = "chatterbox"
    public static let graphs: [String]? = [T3Decoder.graph]
    let inputs: ChatterboxBenchInputs

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try ChatterboxBenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let r = try await inputs.t3(chunk: 0)
        let wall = ChatterboxBenchInputs.milliseconds(since: t0)
        let isDecode: (String) -> Bool = { $0 == "\(T3Decoder.graph).decode" }
        let decodes = clock.count(isDecode)
        return BenchPass(
            audioSeconds: Double(r.tokens.count) / ChatterboxBenchInputs.tokenRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["tokens": Double(r.tokens.count), "stopped": r.stopped ? 1 : 0,
                    "prefill_ms": clock.milliseconds { $0.hasPrefix("\(T3Decoder.graph).prefill") },
                    "ms_per_token": decodes > 0 ? clock.milliseconds(isDecode) / Double(decodes) : 0,
                    "t3_ms": wall])
    }
}

/// `chatterbox.estimator`: the CFM's Euler loop with CFG (`steps` calls of `flow_estimator` at
/// its frame bucket) for the first chunk. T3 and the flow encoder run once at load, untimed,
/// for the speech tokens and mu; the noise is seeded.
public final class ChatterboxEstimatorBench: BenchCase {
    public static let name = "chatterbox.estimator"
    public static let model = "chatterbox"
    public static let graphs: [String]? = [T3Decoder.graph, FlowSolver.encoderGraph, FlowSolver.estimatorGraph]
    let inputs: ChatterboxBenchInputs
    let constants: [String: Tensor]
    let noise: [Float]
    let total: Int, frames: Int, generated: Int
    let schedule: [Float]
    let prepMs: Double

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) async throws {
        let inputs = try ChatterboxBenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
        self.inputs = inputs
        let solver = inputs.host.flowSolver
        schedule = try FlowTables.schedule(steps: inputs.options.steps, cosine: solver.tables.cosineSchedule)
        let t0 = DispatchTime.now().uptimeNanoseconds
        let prep = try inputs.untimedHost()
        let speech = try await inputs.speechTokens(on: prep, bench: Self.name)
        let tokens = inputs.voice.promptTokens + speech.map { Int32($0) }
        total = solver.tables.tokenMelRatio * tokens.count
        frames = try solver.estimatorBuckets.select([("F", total)])["F"]!
        generated = total - inputs.voice.promptFrames
        let mu = try await solver.encode(runner: inputs.untimed, tokens: tokens, total: total)
        constants = solver.cfgInputs(mu: mu, total: total, voice: inputs.voice, frames: frames)
        noise = inputs.draws.noise(chunk: 0, frames: total)
        prepMs = ChatterboxBenchInputs.milliseconds(since: t0)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let states = try await inputs.host.flowSolver.solve(
            runner: clock, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule)
        let wall = ChatterboxBenchInputs.milliseconds(since: t0)
        let steps = states.count - 1
        return BenchPass(
            audioSeconds: Double(generated) / ChatterboxBenchInputs.melRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["steps": Double(steps), "frames": Double(generated), "bucket_frames": Double(frames),
                    "estimator_ms_per_step": clock.graphMilliseconds(FlowSolver.estimatorGraph) / Double(max(steps, 1)),
                    "euler_ms": wall, "prep_ms": prepMs])
    }
}

/// `chatterbox.vocoder`: HiFT on the first chunk's mel (`hift_f0`, the harmonic source and its
/// STFT, `hift_trunk`, iSTFT, clamp) with seeded source draws; T3 and the flow run once at
/// load, untimed, for the mel. `vocoder_ms` is the whole stage, graphs and host steps.
public final class ChatterboxVocoderBench: BenchCase {
    public static let name = "chatterbox.vocoder"
    public static let model = "chatterbox"
    public static let graphs: [String]? = nil
    let inputs: ChatterboxBenchInputs
    let mel: [Float]
    let frames: Int
    let prepMs: Double

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) async throws {
        let inputs = try ChatterboxBenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
        self.inputs = inputs
        let t0 = DispatchTime.now().uptimeNanoseconds
        let prep = try inputs.untimedHost()
        let speech = try await inputs.speechTokens(on: prep, bench: Self.name)
        let noise = inputs.draws.noise(chunk: 0, frames: prep.noiseFrames(voice: inputs.voice, tokens: speech.count))
        let flow = try await prep.flow(speechTokens: speech, voice: inputs.voice, noise: noise, steps: inputs.options.steps)
        mel = flow.mel
        frames = flow.frames
        prepMs = ChatterboxBenchInputs.milliseconds(since: t0)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock, hift = inputs.host.files.hift
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let draws = inputs.draws.hift(chunk: 0, samples: frames * hift.upsample, harmonics: hift.harmonics)
        let r = try await inputs.host.vocode(mel: mel, frames: frames, draws: draws)
        let wav = hift.trimFade.map { HiftSpectra.trimFade(r.wav, fade: $0) } ?? r.wav
        let wall = ChatterboxBenchInputs.milliseconds(since: t0)
        return BenchPass(
            audio: wav, sampleRate: ChatterboxPipeline.sampleRate, audioSeconds: Double(frames) / ChatterboxBenchInputs.melRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["frames": Double(frames), "vocoder_ms": wall,
                    "f0_ms": clock.graphMilliseconds(HiftVocoder.f0Graph),
                    "trunk_ms": clock.graphMilliseconds(HiftVocoder.trunkGraph), "prep_ms": prepMs])
    }
}

/// `chatterbox.speak`: every chunk through the whole host — T3, the flow, HiFT, trim_fade —
/// joined. `VP_TEXT`: through `ChatterboxSpeaker`'s stream, as an app speaks (a chunk of audio
/// per text chunk); `VP_TOKENS`: `ChatterboxPipeline.speak`'s loop of `synthesize`, one chunk's
/// ids at a time. Stage figures are graph time (`*_graph_ms`); `first_audio_ms` is when the
/// first chunk's audio was ready.
public final class ChatterboxSpeakBench: BenchCase {
    public static let name = "chatterbox.speak"
    public static let model = "chatterbox"
    public static let graphs: [String]? = nil
    let inputs: ChatterboxBenchInputs

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try ChatterboxBenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
    }

    /// The Speaker's options as the inputs' (`ChatterboxOptions()` with `VP_MAX_TOKENS`, the
    /// splitmix draws of `VP_SEED`), made fresh: they move into the Speaker's task.
    static func speakOptions(seed: Int, maxNewTokens: Int?) -> sending ChatterboxSpeakOptions {
        var options = ChatterboxSpeakOptions()
        options.generation.maxNewTokens = maxNewTokens
        options.draws = SplitMixDraws(seed: seed)
        return options
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock
        clock.resetTotals()
        let speech = SpeechClock()
        let audio: [Float], timing: SpeechTiming
        var extra: [String: Double]
        if let speaker = inputs.speaker, let text = inputs.text {
            let options = Self.speakOptions(seed: inputs.draws.seed, maxNewTokens: inputs.options.maxNewTokens)
            let said = try await speech.drain(try speaker.speak(text, voice: inputs.voice, options: options))
            (audio, timing) = (said.audio, said.timing)
            extra = ["chunks": Double(said.chunks)]
        } else {
            // `ChatterboxPipeline.speak`, chunk by chunk, so the first chunk's audio is seen when ready
            var results: [ChatterboxChunkResult] = []
            for (i, ids) in inputs.chunks.enumerated() {
                let r = try await inputs.host.synthesize(textIDs: ids, voice: inputs.voice, options: inputs.options, draws: inputs.draws, chunk: i)
                speech.audio(r.wav)
                results.append(r)
            }
            timing = speech.finish()
            audio = results.flatMap(\.wav)
            extra = ["chunks": Double(results.count),
                     "tokens": Double(results.reduce(0) { $0 + $1.t3.tokens.count }),
                     "speech_tokens": Double(results.reduce(0) { $0 + $1.speechTokens.count })]
        }
        let isDecode: (String) -> Bool = { $0 == "\(T3Decoder.graph).decode" }
        let decodes = clock.count(isDecode)
        let steps = clock.count { $0.hasPrefix(FlowSolver.estimatorGraph + ".") }
        extra.merge([
            "ms_per_token": decodes > 0 ? clock.milliseconds(isDecode) / Double(decodes) : 0,
            "estimator_ms_per_step": steps > 0 ? clock.graphMilliseconds(FlowSolver.estimatorGraph) / Double(steps) : 0,
            "t3_graph_ms": clock.graphMilliseconds(T3Decoder.graph),
            "flow_graph_ms": clock.graphMilliseconds(FlowSolver.encoderGraph) + clock.graphMilliseconds(FlowSolver.estimatorGraph),
            "vocoder_graph_ms": clock.graphMilliseconds(HiftVocoder.f0Graph) + clock.graphMilliseconds(HiftVocoder.trunkGraph),
        ]) { $1 }
        return BenchPass(
            audio: audio, sampleRate: ChatterboxPipeline.sampleRate, audioSeconds: Double(audio.count) / Double(ChatterboxPipeline.sampleRate),
            hostMilliseconds: timing.utteranceMilliseconds - clock.totalMilliseconds, extra: extra, speech: timing)
    }
}
