import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner

/// What the benches of a model with T3 and S3Gen (Chatterbox, Chatterbox Turbo: any
/// `S3GenPipeline`) share: the host over the bundle (through a clock), the chunks' ids —
/// `VP_TOKENS` (the chunks of `voxport tokenize MODEL "TEXT"`) or `VP_TEXT` through the Speaker's
/// front end (the bundle's tokenizer.json) — `VP_VOICE` (a file from `voxport voice MODEL`;
/// unset: the bundle's `voice_default.npz`) and the seeded draws of `VP_SEED` (splitmix, not
/// numpy's or torch's generators: a device run, not a replay). Every input is checked here,
/// before a graph runs.
struct S3GenBenchInputs<Pipeline: S3GenPipeline> {
    static var tokenRate: Double { 25 }  // speech tokens per second
    static var melRate: Double { 50 }  // mel frames per second

    let host: Pipeline
    let clock: TimedRunner
    let chunks: [[Int32]]
    /// `VP_TEXT` and the Speaker that says it (over the clock), when the text was given.
    let text: String?
    let speaker: S3GenSpeaker<Pipeline>?
    let voice: Pipeline.Voice
    let options: Pipeline.Options
    let draws: SplitMixDraws
    /// The runner below the bench's timing (the one stages run on at load, untimed).
    let untimed: GraphRunner

    init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment, bench: String) throws {
        let model = Pipeline.model
        guard env.tokens?.isEmpty == false || env.text != nil else {
            throw VoxportError(
                .user, "\(bench) needs VP_TOKENS (the output of `voxport tokenize \(model) \"TEXT\"`) or VP_TEXT (the text itself)")
        }
        // a voice file first (cheap), then the host tables (the T3 table is the bundle's biggest file)
        let given = try env.voice.map { try Self.voiceFile($0, bundle: bundle) }
        let files = try Pipeline.Files.load(bundle)
        guard let voice = given ?? files.defaultVoice else {
            throw VoxportError(
                .user, "the bundle has no default voice (\(Pipeline.Voice.defaultFileName)): set VP_VOICE to a file from `voxport voice \(model)`")
        }
        self.voice = voice
        clock = TimedRunner(wrapping: runner)
        host = try Pipeline(runner: clock, files: files)
        text = env.text
        if let text = env.text {
            let speaker = try S3GenSpeaker<Pipeline>(runner: clock, files: files, tokenizer: try BenchText.tokenizer(bundle))
            self.speaker = speaker
            chunks = try BenchText.frontEnd { try speaker.chunks(text) }.map(\.ids)
        } else {
            speaker = nil
            chunks = (env.tokens ?? []).map { $0.map { Int32(clamping: $0) } }
        }
        var options = Pipeline.Options()
        options.maxNewTokens = env.maxTokens
        self.options = options
        draws = SplitMixDraws(seed: env.seed, vocab: Pipeline.t3Vocab)
        untimed = (runner as? TimedRunner)?.base ?? runner
        // a bad voice, a bad id or an over-long chunk fails here, before any graph runs
        try host.checkVoice(voice)
        let source = env.text != nil ? "VP_TEXT" : "VP_TOKENS"
        for (i, ids) in chunks.enumerated() {
            do {
                try host.checkChunk(ids, voice: voice, options: options)
            } catch let e as VoxportError {
                throw VoxportError(e.kind == .bucketOverflow ? .bucketOverflow : .user, "\(source) chunk \(i): \(e.message)")
            }
        }
    }

    /// `VP_VOICE`: a voice file (`voxport voice MODEL`) or a file of the bundle by name.
    static func voiceFile(_ spec: String, bundle: ModelBundle) throws -> Pipeline.Voice {
        var url = URL(fileURLWithPath: spec)
        if !FileManager.default.fileExists(atPath: url.path) {
            guard bundle.manifest.files[spec] != nil else {
                throw VoxportError(
                    .user, "VP_VOICE \(spec): no such file (make one with `voxport voice \(Pipeline.model) --ref WAV -o voice.npz`)")
            }
            url = try bundle.fileURL(spec)
        }
        return try Pipeline.Voice.load(url)
    }

    /// T3 for chunk `i` with the seeded uniforms.
    func t3(chunk i: Int, on h: Pipeline? = nil) async throws -> Pipeline.T3Out {
        try await (h ?? host).t3(textIDs: chunks[i], voice: voice, options: options, uniforms: draws.uniforms(chunk: i))
    }

    /// A host over the untimed runner, for the stages a bench needs done once at load.
    func untimedHost() throws -> Pipeline { try Pipeline(runner: untimed, files: host.files) }

    /// The first chunk's speech tokens for S3Gen (T3 once, untimed), or a user error when it drew none.
    func speechTokens(on h: Pipeline, bench: String) async throws -> [Int] {
        let speech = Pipeline.speechTokens(try await t3(chunk: 0, on: h).tokens)
        guard !speech.isEmpty else {
            throw VoxportError(.user, "\(bench): T3 drew no speech tokens for the first chunk with VP_SEED=\(draws.seed): try another seed")
        }
        return speech
    }

    static func milliseconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6 }
}

/// `MODEL.t3`: the first chunk's T3 loop (prefill, one decode call per token, the sampling — and
/// Chatterbox's CFG — on the host). `ms_per_token` is the decode calls' graph time per call.
public class S3GenT3Bench<Pipeline: S3GenPipeline> {
    public static var model: String { Pipeline.model }
    public static var graphs: [String]? { [Pipeline.t3Graph] }
    let inputs: S3GenBenchInputs<Pipeline>

    public required init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try S3GenBenchInputs(bundle: bundle, runner: runner, environment: env, bench: "\(Pipeline.model).t3")
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let r = try await inputs.t3(chunk: 0)
        let wall = S3GenBenchInputs<Pipeline>.milliseconds(since: t0)
        let isDecode: (String) -> Bool = { $0 == "\(Pipeline.t3Graph).decode" }
        let decodes = clock.count(isDecode)
        return BenchPass(
            audioSeconds: Double(r.tokens.count) / S3GenBenchInputs<Pipeline>.tokenRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["tokens": Double(r.tokens.count), "stopped": r.stopped ? 1 : 0,
                    "prefill_ms": clock.milliseconds { $0.hasPrefix("\(Pipeline.t3Graph).prefill") },
                    "ms_per_token": decodes > 0 ? clock.milliseconds(isDecode) / Double(decodes) : 0,
                    "t3_ms": wall])
    }
}

/// `MODEL.estimator`: the flow's loop for the first chunk at its frame bucket, the one
/// `flow_host.npz` names — Chatterbox's Euler with CFG (a batch of 2, `steps` calls), Turbo's
/// mean-flow (a batch of 1 with the step's end time `r` fed, 2 calls). T3 and the flow encoder
/// run once at load, untimed, for the speech tokens and mu; the noise is seeded.
public class S3GenEstimatorBench<Pipeline: S3GenPipeline> {
    public static var model: String { Pipeline.model }
    public static var graphs: [String]? { [Pipeline.t3Graph, FlowSolver.encoderGraph, FlowSolver.estimatorGraph] }
    let inputs: S3GenBenchInputs<Pipeline>
    let constants: [String: Tensor]
    let noise: [Float]
    let total: Int, frames: Int, generated: Int
    let schedule: [Float]
    let prepMs: Double

    public required init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) async throws {
        let inputs = try S3GenBenchInputs<Pipeline>(bundle: bundle, runner: runner, environment: env, bench: "\(Pipeline.model).estimator")
        self.inputs = inputs
        let solver = inputs.host.s3gen.flowSolver
        schedule = try solver.schedule(steps: inputs.options.steps)
        let t0 = DispatchTime.now().uptimeNanoseconds
        let prep = try inputs.untimedHost()
        let speech = try await inputs.speechTokens(on: prep, bench: "\(Pipeline.model).estimator")
        let tokens = inputs.voice.promptTokens + speech.map { Int32($0) }
        total = solver.tables.tokenMelRatio * tokens.count
        frames = try solver.estimatorBuckets.select([("F", total)])["F"]!
        generated = total - inputs.voice.promptFrames
        let mu = try await solver.encode(runner: inputs.untimed, tokens: tokens, total: total)
        constants = solver.loopInputs(mu: mu, total: total, voice: inputs.voice, frames: frames)
        noise = inputs.draws.noise(chunk: 0, frames: total)
        prepMs = S3GenBenchInputs<Pipeline>.milliseconds(since: t0)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let states = try await inputs.host.s3gen.flowSolver.solveLoop(
            runner: clock, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule)
        let wall = S3GenBenchInputs<Pipeline>.milliseconds(since: t0)
        let steps = states.count - 1
        return BenchPass(
            audioSeconds: Double(generated) / S3GenBenchInputs<Pipeline>.melRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["steps": Double(steps), "frames": Double(generated), "bucket_frames": Double(frames),
                    "batch": Double(constants["mask"]?.shape.first ?? 0),
                    "estimator_ms_per_step": clock.graphMilliseconds(FlowSolver.estimatorGraph) / Double(max(steps, 1)),
                    "euler_ms": wall, "prep_ms": prepMs])
    }
}

/// `MODEL.vocoder`: HiFT on the first chunk's mel (`hift_f0`, the harmonic source and its STFT,
/// `hift_trunk`, iSTFT, clamp) with seeded source draws; T3 and the flow run once at load,
/// untimed, for the mel. `vocoder_ms` is the whole stage, graphs and host steps.
public class S3GenVocoderBench<Pipeline: S3GenPipeline> {
    public static var model: String { Pipeline.model }
    public static var graphs: [String]? { nil }
    let inputs: S3GenBenchInputs<Pipeline>
    let mel: [Float]
    let frames: Int
    let prepMs: Double

    public required init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) async throws {
        let inputs = try S3GenBenchInputs<Pipeline>(bundle: bundle, runner: runner, environment: env, bench: "\(Pipeline.model).vocoder")
        self.inputs = inputs
        let t0 = DispatchTime.now().uptimeNanoseconds
        let prep = try inputs.untimedHost()
        let speech = try await inputs.speechTokens(on: prep, bench: "\(Pipeline.model).vocoder")
        let noise = inputs.draws.noise(chunk: 0, frames: prep.s3gen.noiseFrames(prompt: inputs.voice, tokens: speech.count))
        let flow = try await prep.s3gen.flow(
            runner: prep.runner, speechTokens: speech, prompt: inputs.voice, noise: noise, steps: inputs.options.steps)
        mel = flow.mel
        frames = flow.frames
        prepMs = S3GenBenchInputs<Pipeline>.milliseconds(since: t0)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let clock = inputs.clock, host = inputs.host, hift = host.files.hift
        clock.resetTotals()
        let t0 = DispatchTime.now().uptimeNanoseconds
        let draws = inputs.draws.hift(chunk: 0, samples: frames * hift.upsample, harmonics: hift.harmonics)
        let r = try await host.s3gen.vocoder.vocode(runner: host.runner, mel: mel, frames: frames, draws: draws)
        let wav = hift.trimFade.map { HiftSpectra.trimFade(r.wav, fade: $0) } ?? r.wav
        let wall = S3GenBenchInputs<Pipeline>.milliseconds(since: t0)
        return BenchPass(
            audio: wav, sampleRate: Pipeline.sampleRate, audioSeconds: Double(frames) / S3GenBenchInputs<Pipeline>.melRate,
            hostMilliseconds: wall - clock.totalMilliseconds,
            extra: ["frames": Double(frames), "vocoder_ms": wall,
                    "f0_ms": clock.graphMilliseconds(HiftVocoder.f0Graph),
                    "trunk_ms": clock.graphMilliseconds(HiftVocoder.trunkGraph), "prep_ms": prepMs])
    }
}

/// `MODEL.speak`: every chunk through the whole host — T3, the flow, HiFT, trim_fade — joined.
/// `VP_TEXT`: through the model's `S3GenSpeaker` stream, as an app speaks (a chunk of audio per
/// text chunk); `VP_TOKENS`: the pipeline's `speak` loop of `synthesize`, one chunk's ids at a
/// time. Stage figures are graph time (`*_graph_ms`); `first_audio_ms` is when the first chunk's
/// audio was ready.
public class S3GenSpeakBench<Pipeline: S3GenPipeline> {
    public static var model: String { Pipeline.model }
    public static var graphs: [String]? { nil }
    let inputs: S3GenBenchInputs<Pipeline>

    public required init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try S3GenBenchInputs(bundle: bundle, runner: runner, environment: env, bench: "\(Pipeline.model).speak")
    }

    /// The Speaker's options as the inputs' (the model's defaults with `VP_MAX_TOKENS`, the
    /// splitmix draws of `VP_SEED`), made fresh: they move into the Speaker's task.
    static func speakOptions(seed: Int, maxNewTokens: Int?) -> sending S3GenSpeakOptions<Pipeline> {
        var options = S3GenSpeakOptions<Pipeline>()
        options.generation.maxNewTokens = maxNewTokens
        options.draws = SplitMixDraws(seed: seed, vocab: Pipeline.t3Vocab)
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
            // the pipeline's `speak`, chunk by chunk, so the first chunk's audio is seen when ready
            var results: [Pipeline.ChunkResult] = []
            for (i, ids) in inputs.chunks.enumerated() {
                let r = try await inputs.host.synthesize(textIDs: ids, voice: inputs.voice, options: inputs.options, draws: inputs.draws, chunk: i)
                speech.audio(r.wav)
                results.append(r)
            }
            timing = speech.finish()
            audio = results.flatMap(\.wav)
            extra = ["chunks": Double(results.count),
                     "tokens": Double(results.reduce(0) { $0 + $1.t3Tokens.count }),
                     "speech_tokens": Double(results.reduce(0) { $0 + $1.speechTokens.count })]
        }
        let isDecode: (String) -> Bool = { $0 == "\(Pipeline.t3Graph).decode" }
        let decodes = clock.count(isDecode)
        let steps = clock.count { $0.hasPrefix(FlowSolver.estimatorGraph + ".") }
        extra.merge([
            "ms_per_token": decodes > 0 ? clock.milliseconds(isDecode) / Double(decodes) : 0,
            "estimator_ms_per_step": steps > 0 ? clock.graphMilliseconds(FlowSolver.estimatorGraph) / Double(steps) : 0,
            "t3_graph_ms": clock.graphMilliseconds(Pipeline.t3Graph),
            "flow_graph_ms": clock.graphMilliseconds(FlowSolver.encoderGraph) + clock.graphMilliseconds(FlowSolver.estimatorGraph),
            "vocoder_graph_ms": clock.graphMilliseconds(HiftVocoder.f0Graph) + clock.graphMilliseconds(HiftVocoder.trunkGraph),
        ]) { $1 }
        return BenchPass(
            audio: audio, sampleRate: Pipeline.sampleRate, audioSeconds: Double(audio.count) / Double(Pipeline.sampleRate),
            hostMilliseconds: timing.utteranceMilliseconds - clock.totalMilliseconds, extra: extra, speech: timing)
    }
}
