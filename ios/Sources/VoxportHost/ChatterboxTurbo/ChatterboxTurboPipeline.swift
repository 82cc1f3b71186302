import Foundation
import VoxportCore
import VoxportRunner

/// The publisher's `generate` defaults (`pipeline.SpeakOptions`, chatterbox-tts 0.1.7
/// `ChatterboxTurboTTS`): `inference_turbo`'s sampler and S3Gen's 2 mean-flow steps.
public struct ChatterboxTurboOptions: Sendable {
    public var temperature: Float = 0.8
    public var topK = 1000
    public var topP: Float = 0.95
    public var repetitionPenalty: Float = 1.2
    public var steps = 2
    public var maxNewTokens: Int? = nil  // nil: the bundle's speech budget
    public init() {}

    public var sampling: SamplingConfig {
        .chatterboxTurbo(temperature: temperature, topK: topK, topP: topP, repetitionPenalty: repetitionPenalty)
    }
}

/// What Turbo's `generate` hands S3Gen (`pipeline.speech_tokens_for_s3gen`): the drawn tokens
/// below the 6561 S3 tokens (a drawn start token is dropped, not cut at, unlike Chatterbox's
/// `SpeechTokens.dropInvalid`), then three S3GEN_SIL silence tokens.
public enum ChatterboxTurboSpeechTokens {
    public static let silence = 4299
    public static let trailingSilence = 3

    public static func forS3Gen(_ tokens: [Int]) -> [Int] {
        tokens.filter { $0 < SpeechTokens.speechVocab } + [Int](repeating: silence, count: trailingSilence)
    }
}

/// One chunk's result (`pipeline.ChunkResult`).
public struct ChatterboxTurboChunkResult: Sendable {
    public let t3: ChatterboxTurboT3Result
    public let speechTokens: [Int]
    public let flow: FlowResult
    public let hift: HiftResult
    /// float32 at 24 kHz, trim_fade applied.
    public let wav: [Float]
    public let hostMilliseconds: Double
    public let graphMilliseconds: Double
}

/// What a Chatterbox Turbo bundle carries for its host (`export.py` HOST_ARRAYS, DEFAULT_VOICE).
public struct ChatterboxTurboBundleFiles: Sendable {
    public let t3: ChatterboxTurboT3Tables
    public let flow: FlowTables
    public let hift: HiftTables
    public let defaultVoice: ChatterboxTurboVoice?

    public init(t3: ChatterboxTurboT3Tables, flow: FlowTables, hift: HiftTables, defaultVoice: ChatterboxTurboVoice?) {
        self.t3 = t3
        self.flow = flow
        self.hift = hift
        self.defaultVoice = defaultVoice
    }

    public static func load(_ bundle: ModelBundle) throws -> ChatterboxTurboBundleFiles {
        let voice = bundle.manifest.files[ChatterboxTurboVoice.defaultFileName] == nil
            ? nil : try ChatterboxTurboVoice.load(try bundle.fileURL(ChatterboxTurboVoice.defaultFileName))
        return ChatterboxTurboBundleFiles(
            t3: try ChatterboxTurboT3Tables.load(try bundle.fileURL(ChatterboxTurboT3Tables.fileName)),
            flow: try FlowTables.load(try bundle.fileURL(FlowTables.fileName)),
            hift: try HiftTables.load(try bundle.fileURL(HiftTables.fileName)),
            defaultVoice: voice)
    }
}

/// Text ids to speech over a Chatterbox Turbo bundle, the Python host's steps in its order
/// (`conversion/chatterbox_turbo/pipeline.py` TurboPipeline.synthesize):
///
///     text ids ─ChatterboxTurboT3 (t3: prefill + decode, one row, sampling on the host)─▶ tokens
///     ─ChatterboxTurboSpeechTokens.forS3Gen (+ 3 silence)─▶ ─S3GenHost (flow_encoder, mean-flow
///     over flow_estimator; hift_f0, source + STFT, hift_trunk, iSTFT; trim_fade)─▶ wav
///
/// The draws come from a `ChatterboxDraws` as Chatterbox's do (Python's `ChunkDraws` scheme is
/// the same for both models: uniforms [6563] per draw here).
public final class ChatterboxTurboPipeline {
    public static let sampleRate = 24000
    public let runner: TimedRunner
    public let files: ChatterboxTurboBundleFiles
    public let t3Host: ChatterboxTurboT3
    public let s3gen: S3GenHost
    public let speechBudget: Int
    /// The voice caps the bundle's buckets are sized to (`check_voice`).
    public let promptTokensMax: Int, t3PromptTokensMax: Int

    public init(runner: GraphRunner, files: ChatterboxTurboBundleFiles) throws {
        let config = try BundleConfig(runner.manifest, model: "chatterbox_turbo")
        self.runner = TimedRunner(wrapping: runner)
        self.files = files
        speechBudget = try config.int("speech_budget")
        promptTokensMax = try config.int("prompt_tokens_max")
        t3PromptTokensMax = try config.int("t3_prompt_tokens_max")
        t3Host = ChatterboxTurboT3(tables: files.t3, prefillBuckets: try .oneDim("P", sizes: config.sizes("prefill_buckets")),
                                   kvLength: try config.int("kv_length"))
        s3gen = try S3GenHost(flow: files.flow, hift: files.hift, manifest: runner.manifest, config: config)
        guard files.flow.meanFlow else {
            throw VoxportError(.bundleIntegrity, "\(FlowTables.fileName) lacks meanflow = 1: not a Chatterbox Turbo bundle's flow; re-export it")
        }
    }

    public convenience init(runner: GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, files: try ChatterboxTurboBundleFiles.load(bundle))
    }

    /// A user error when `voice`'s prompts are longer than the bundle's caps, before any graph.
    public func checkVoice(_ voice: ChatterboxTurboVoice) throws {
        for (what, have, cap) in [("S3Gen prompt", voice.promptTokens.count, promptTokensMax),
                                  ("T3 prompt", voice.t3PromptTokens.count, t3PromptTokensMax)] where have > cap {
            throw VoxportError(.user, "the voice has \(have) \(what) tokens; this bundle takes at most \(cap): clone it again with `voxport voice chatterbox_turbo --ref WAV`")
        }
    }

    public func t3(textIDs: [Int32], voice: ChatterboxTurboVoice, options: ChatterboxTurboOptions, uniforms: T3Uniforms) async throws
        -> ChatterboxTurboT3Result
    {
        try await t3Host.generate(runner: runner, cond: voice.t3Cond, textIDs: textIDs.map { Int($0) }, sampling: options.sampling,
                                  uniforms: uniforms, maxNewTokens: options.maxNewTokens ?? speechBudget)
    }

    /// One chunk of text ids (as `voxport tokenize chatterbox_turbo` prints them) to audio.
    public func synthesize(textIDs: [Int32], voice: ChatterboxTurboVoice, options: ChatterboxTurboOptions = .init(),
                           draws: any ChatterboxDraws, chunk: Int = 0) async throws -> ChatterboxTurboChunkResult {
        try checkVoice(voice)
        let start = DispatchTime.now().uptimeNanoseconds, graphStart = runner.graphNanoseconds
        let t3 = try await self.t3(textIDs: textIDs, voice: voice, options: options, uniforms: draws.uniforms(chunk: chunk))
        let speech = ChatterboxTurboSpeechTokens.forS3Gen(t3.tokens)
        let s = try await s3gen.speech(runner: runner, speechTokens: speech, prompt: voice, steps: options.steps, draws: draws, chunk: chunk)
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let graph = Double(runner.graphNanoseconds - graphStart) / 1e6
        return ChatterboxTurboChunkResult(t3: t3, speechTokens: speech, flow: s.flow, hift: s.hift, wav: s.wav,
                                          hostMilliseconds: total - graph, graphMilliseconds: graph)
    }
}
