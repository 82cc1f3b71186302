import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// `speak`'s knobs for a model with S3Gen and where each chunk's randomness comes from (seeded
/// splitmix draws, `Pipeline.t3Vocab` uniforms per T3 draw, by default).
public struct S3GenSpeakOptions<Pipeline: S3GenPipeline> {
    public var generation = Pipeline.Options()
    public var draws: any ChatterboxDraws = SplitMixDraws(vocab: Pipeline.t3Vocab)
    public init() {}
}

/// `ChatterboxPipeline.speak`'s knobs.
public typealias ChatterboxSpeakOptions = S3GenSpeakOptions<ChatterboxPipeline>
/// `ChatterboxTurboPipeline.speak`'s knobs.
public typealias ChatterboxTurboSpeakOptions = S3GenSpeakOptions<ChatterboxTurboPipeline>

/// Chatterbox as a `Speaker`: text through `ChatterboxText` (punc_norm, `[SPACE]`, the bundle's
/// tokenizer.json, SOT/EOT, the long-text split).
public typealias ChatterboxSpeaker = S3GenSpeaker<ChatterboxPipeline>
/// Chatterbox Turbo as a `Speaker`: text through `ChatterboxTurboText` (Turbo's punc_norm, the
/// bundle's GPT-2 tokenizer.json, the long-text split).
public typealias ChatterboxTurboSpeaker = S3GenSpeaker<ChatterboxTurboPipeline>

/// A model with S3Gen as a `Speaker`, one text chunk (a sentence, or sentences packed to the T3
/// prefill's budget) at a time: text through the model's front end (`Pipeline.Front`), each
/// chunk's ids through `Pipeline.synthesize` as the pipeline's `speak(chunks:)` runs them, so the
/// chunks laid end to end are its audio.
public struct S3GenSpeaker<Pipeline: S3GenPipeline>: Speaker {
    /// `export.TOKENIZER`: the publisher's tokenizer, a hashed host file of the bundle.
    public static var tokenizerFile: String { "tokenizer.json" }

    public let runner: any GraphRunner
    public let files: Pipeline.Files
    public let front: Pipeline.Front
    /// The most text ids one chunk may hold (`config.text_budget`, from the manifest).
    public let textBudget: Int

    public init(runner: any GraphRunner, files: Pipeline.Files, tokenizer: Tokenizer) throws {
        // Refuses a manifest without the model's config (Turbo: a flow that is not mean-flow) now,
        // not at the first speak.
        _ = try Pipeline(runner: runner, files: files)
        textBudget = try BundleConfig(runner.manifest, model: Pipeline.model).int("text_budget")
        self.runner = runner
        self.files = files
        front = Pipeline.Front(tokenizer: tokenizer)
    }

    /// An opened (verified) bundle's host files and tokenizer over `runner`.
    public init(runner: any GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, files: try Pipeline.Files.load(bundle),
                      tokenizer: try Tokenizer(contentsOf: try bundle.fileURL(Self.tokenizerFile)))
    }

    public var model: String { Pipeline.model }
    public var sampleRate: Int { Pipeline.sampleRate }

    public func makeOptions() -> sending S3GenSpeakOptions<Pipeline> { S3GenSpeakOptions() }

    /// The chunks `speak` would say, with their ids (empty text: Python's error).
    public func chunks(_ text: String) throws -> [TextChunk] {
        try front.chunks(text, budget: textBudget)
    }

    /// `text` spoken chunk by chunk; `voice` nil: the bundle's default voice.
    public func speak(_ text: String, voice: Pipeline.Voice?, options: sending S3GenSpeakOptions<Pipeline>) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let chunks = try self.chunks(text)
        let pipeline = try Pipeline(runner: CancellationCheckingRunner(wrapping: runner), files: files)
        let voice = try pipeline.voice(voice)
        try pipeline.checkVoice(voice)
        let rate = sampleRate
        return SpeechStream.make { continuation in
            for (i, chunk) in chunks.enumerated() {
                try Task.checkCancellation()
                let r = try await pipeline.synthesize(
                    textIDs: chunk.ids, voice: voice, options: options.generation, draws: options.draws, chunk: i)
                continuation.yield(SpeechChunk(samples: r.wav, sampleRate: rate, text: chunk.text, piece: i, pieceCount: chunks.count))
            }
        }
    }
}
