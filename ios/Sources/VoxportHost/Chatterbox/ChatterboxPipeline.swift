import Foundation
import Synchronization
import VoxportCore
import VoxportRunner

/// The publisher's `generate` defaults (`pipeline.SpeakOptions`, chatterbox-tts 0.1.7).
public struct ChatterboxOptions: Sendable {
    public var exaggeration: Float? = nil  // nil: the voice's own (0.5 for the default voice)
    public var cfgWeight: Float = 0.5
    public var temperature: Float = 0.8
    public var repetitionPenalty: Float = 1.2
    public var minP: Float = 0.05
    public var topP: Float = 1.0
    public var steps = 10
    public var maxNewTokens: Int? = nil  // nil: the bundle's speech budget
    public init() {}

    public var sampling: SamplingConfig {
        SamplingConfig(temperature: temperature, topP: topP, minP: minP, repetitionPenalty: repetitionPenalty,
                       cfgWeight: cfgWeight, order: .chatterbox)
    }
}

/// One chunk's result (`pipeline.ChunkResult`).
public struct ChatterboxChunkResult: Sendable {
    public let t3: T3Result
    public let speechTokens: [Int]
    public let flow: FlowResult?
    public let hift: HiftResult?
    /// float32 at 24 kHz, trim_fade applied.
    public let wav: [Float]
    public let hostMilliseconds: Double
    public let graphMilliseconds: Double
}

/// What a Chatterbox bundle carries for its host (`export.py`, `host_files.py`): the three host
/// tables and the default voice, each verified by `ModelBundle.open` before it is read.
public struct ChatterboxBundleFiles: Sendable {
    public let t3: T3Tables
    public let flow: FlowTables
    public let hift: HiftTables
    public let defaultVoice: ChatterboxVoice?

    public init(t3: T3Tables, flow: FlowTables, hift: HiftTables, defaultVoice: ChatterboxVoice?) {
        self.t3 = t3
        self.flow = flow
        self.hift = hift
        self.defaultVoice = defaultVoice
    }

    public static func load(_ bundle: ModelBundle) throws -> ChatterboxBundleFiles {
        let voice = bundle.manifest.files[ChatterboxVoice.defaultFileName] == nil
            ? nil : try ChatterboxVoice.load(try bundle.fileURL(ChatterboxVoice.defaultFileName))
        return ChatterboxBundleFiles(
            t3: try T3Tables.load(try bundle.fileURL(T3Tables.fileName)),
            flow: try FlowTables.load(try bundle.fileURL(FlowTables.fileName)),
            hift: try HiftTables.load(try bundle.fileURL(HiftTables.fileName)),
            defaultVoice: voice)
    }
}

/// Text tokens to speech over a Chatterbox bundle, the Python host's steps in its order
/// (`conversion/chatterbox/pipeline.py`):
///
///     text ids ─T3Decoder (t3: prefill + decode, CFG + sampling on the host)─▶ tokens
///     ─SpeechTokens.dropInvalid─▶ ─FlowSolver (flow_encoder, Euler over flow_estimator)─▶ mel
///     ─HiftVocoder (hift_f0, source + STFT, hift_trunk, iSTFT, clamp)─▶ trim_fade ─▶ wav
///
/// Buckets come from the manifest's `config` (as the Python pipeline takes them from its
/// ChatterboxConfig); state lives in the runner. Per-stage entry points (`t3`, `flow`,
/// `vocode`) are what a bench times.
public final class ChatterboxPipeline {
    public static let sampleRate = 24000
    /// The runner given, timed.
    public let runner: TimedRunner
    public let files: ChatterboxBundleFiles
    public let decoder: T3Decoder
    /// The flow and the vocoder (shared with Chatterbox Turbo).
    public let s3gen: S3GenHost
    public var flowSolver: FlowSolver { s3gen.flowSolver }
    public var vocoder: HiftVocoder { s3gen.vocoder }
    public let speechBudget: Int

    public init(runner: GraphRunner, files: ChatterboxBundleFiles) throws {
        let config = try BundleConfig(runner.manifest, model: "chatterbox")
        guard let kv = config.values["kv_length"]?.intValue, let budget = config.values["speech_budget"]?.intValue else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks kv_length / speech_budget: re-export the bundle")
        }
        self.runner = TimedRunner(wrapping: runner)
        self.files = files
        self.speechBudget = budget
        decoder = T3Decoder(tables: files.t3, prefillBuckets: try .oneDim("P", sizes: config.sizes("prefill_buckets")), kvLength: kv)
        s3gen = try S3GenHost(flow: files.flow, hift: files.hift, manifest: runner.manifest, config: config)
    }

    /// Opens, verifies and loads a bundle folder over `runner`.
    public convenience init(runner: GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, files: try ChatterboxBundleFiles.load(bundle))
    }

    // -- stages ---------------------------------------------------------------------------

    public func t3(textIDs: [Int32], voice: ChatterboxVoice, options: ChatterboxOptions, uniforms: T3Uniforms) async throws
        -> T3Result
    {
        try await decoder.generate(
            runner: runner, condEmb: try voice.condEmb(exaggeration: options.exaggeration), textIDs: textIDs,
            sampling: options.sampling, uniforms: uniforms, maxNewTokens: options.maxNewTokens ?? speechBudget)
    }

    public func flow(speechTokens: [Int], voice: ChatterboxVoice, noise: [Float], steps: Int = 10) async throws -> FlowResult {
        try await s3gen.flow(runner: runner, speechTokens: speechTokens, prompt: voice, noise: noise, steps: steps)
    }

    public func vocode(mel: [Float], frames: Int, draws: HiftDraws) async throws -> HiftResult {
        try await vocoder.vocode(runner: runner, mel: mel, frames: frames, draws: draws)
    }

    /// The CFM's noise frames for `tokens` speech tokens: ratio x (prompt + speech tokens).
    public func noiseFrames(voice: ChatterboxVoice, tokens: Int) -> Int {
        s3gen.noiseFrames(prompt: voice, tokens: tokens)
    }

    // -- speech ---------------------------------------------------------------------------

    /// One chunk of text ids (SOT .. EOT, as `voxport tokenize chatterbox` prints them) to audio.
    public func synthesize(textIDs: [Int32], voice: ChatterboxVoice, options: ChatterboxOptions = .init(),
                           draws: ChatterboxDraws, chunk: Int = 0) async throws -> ChatterboxChunkResult {
        let start = DispatchTime.now().uptimeNanoseconds, graphStart = runner.graphNanoseconds
        let t3 = try await self.t3(textIDs: textIDs, voice: voice, options: options, uniforms: draws.uniforms(chunk: chunk))
        let speech = SpeechTokens.dropInvalid(t3.tokens)
        var flowResult: FlowResult?, hiftResult: HiftResult?
        var wav: [Float] = []
        if !speech.isEmpty {
            (flowResult, hiftResult, wav) = try await s3gen.speech(
                runner: runner, speechTokens: speech, prompt: voice, steps: options.steps, draws: draws, chunk: chunk)
        }
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let graph = Double(runner.graphNanoseconds - graphStart) / 1e6
        let host = total - graph
        return ChatterboxChunkResult(t3: t3, speechTokens: speech, flow: flowResult, hift: hiftResult, wav: wav,
                                     hostMilliseconds: host, graphMilliseconds: graph)
    }
}
