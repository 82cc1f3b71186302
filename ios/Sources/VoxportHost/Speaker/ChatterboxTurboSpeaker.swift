import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// `ChatterboxTurboPipeline.speak`'s knobs and where each chunk's randomness comes from.
public struct ChatterboxTurboSpeakOptions {
    public var generation = ChatterboxTurboOptions()
    public var draws: any ChatterboxDraws = SplitMixDraws(vocab: ChatterboxTurboT3Tables.vocab)
    public init() {}
}

/// Chatterbox Turbo as a `Speaker`, one text chunk at a time: text through `ChatterboxTurboText`
/// (Turbo's punc_norm, the bundle's GPT-2 tokenizer.json, the long-text split to the text
/// budget), each chunk's ids through `ChatterboxTurboPipeline.synthesize` as `speak(chunks:)`
/// runs them, so the chunks laid end to end are its audio.
public struct ChatterboxTurboSpeaker: Speaker {
    /// `export.TOKENIZER`.
    public static let tokenizerFile = "tokenizer.json"

    public let runner: any GraphRunner
    public let files: ChatterboxTurboBundleFiles
    public let front: ChatterboxTurboText
    /// The most text ids one chunk may hold (`config.text_budget`, from the manifest).
    public let textBudget: Int

    public init(runner: any GraphRunner, files: ChatterboxTurboBundleFiles, tokenizer: Tokenizer) throws {
        // Refuses a manifest without Turbo's config (or a flow that is not mean-flow) now.
        _ = try ChatterboxTurboPipeline(runner: runner, files: files)
        textBudget = try BundleConfig(runner.manifest, model: "chatterbox_turbo").int("text_budget")
        self.runner = runner
        self.files = files
        front = ChatterboxTurboText(tokenizer: tokenizer)
    }

    /// An opened (verified) bundle's host files and tokenizer over `runner`.
    public init(runner: any GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, files: try ChatterboxTurboBundleFiles.load(bundle),
                      tokenizer: try Tokenizer(contentsOf: try bundle.fileURL(Self.tokenizerFile)))
    }

    public var model: String { "chatterbox_turbo" }
    public var sampleRate: Int { ChatterboxTurboPipeline.sampleRate }

    public func makeOptions() -> sending ChatterboxTurboSpeakOptions { ChatterboxTurboSpeakOptions() }

    /// The chunks `speak` would say, with their ids (empty text: Python's error).
    public func chunks(_ text: String) throws -> [ChatterboxTurboText.Chunk] {
        try front.chunks(text, budget: textBudget)
    }

    /// `text` spoken chunk by chunk; `voice` nil: the bundle's default voice.
    public func speak(_ text: String, voice: ChatterboxTurboVoice?, options: sending ChatterboxTurboSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let chunks = try self.chunks(text)
        guard let voice = voice ?? files.defaultVoice else {
            throw VoxportError(.user, "the bundle has no default voice (voice_default.npz): pass a voice from `voxport voice chatterbox_turbo`")
        }
        let pipeline = try ChatterboxTurboPipeline(runner: CancellationCheckingRunner(wrapping: runner), files: files)
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
