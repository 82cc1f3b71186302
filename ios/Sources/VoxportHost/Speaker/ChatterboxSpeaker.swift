import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// `ChatterboxPipeline.speak`'s knobs and where each chunk's randomness comes from.
public struct ChatterboxSpeakOptions {
    public var generation = ChatterboxOptions()
    public var draws: any ChatterboxDraws = SplitMixDraws()
    public init() {}
}

/// Chatterbox as a `Speaker`, one text chunk (a sentence, or sentences packed to the T3
/// prefill's budget) at a time: text through `ChatterboxText` (punc_norm, the bundle's
/// tokenizer.json, the long-text split), each chunk's ids through `ChatterboxPipeline.synthesize`
/// as `speak(chunks:)` runs them, so the chunks laid end to end are its audio.
public struct ChatterboxSpeaker: Speaker {
    /// `export.TOKENIZER`: the publisher's tokenizer, a hashed host file of the bundle.
    public static let tokenizerFile = "tokenizer.json"

    public let runner: any GraphRunner
    public let files: ChatterboxBundleFiles
    public let front: ChatterboxText
    /// The most text ids one chunk may hold (`config.text_budget`, from the manifest).
    public let textBudget: Int

    public init(runner: any GraphRunner, files: ChatterboxBundleFiles, tokenizer: Tokenizer) throws {
        // Refuses a manifest without Chatterbox's config now, not at the first speak.
        _ = try ChatterboxPipeline(runner: runner, files: files)
        guard let budget = runner.manifest.config["config"]?["text_budget"]?.intValue else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks 'text_budget': re-export the bundle")
        }
        self.runner = runner
        self.files = files
        front = ChatterboxText(tokenizer: tokenizer)
        textBudget = budget
    }

    /// An opened (verified) bundle's host files and tokenizer over `runner`.
    public init(runner: any GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, files: try ChatterboxBundleFiles.load(bundle),
                      tokenizer: try Tokenizer(contentsOf: try bundle.fileURL(Self.tokenizerFile)))
    }

    public var model: String { "chatterbox" }
    public var sampleRate: Int { ChatterboxPipeline.sampleRate }

    public func makeOptions() -> sending ChatterboxSpeakOptions { ChatterboxSpeakOptions() }

    /// The chunks `speak` would say, with their ids (empty text: Python's error).
    public func chunks(_ text: String) throws -> [ChatterboxText.Chunk] {
        try front.chunks(text, budget: textBudget)
    }

    /// `text` spoken chunk by chunk; `voice` nil: the bundle's default voice.
    public func speak(_ text: String, voice: ChatterboxVoice?, options: sending ChatterboxSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let chunks = try self.chunks(text)
        guard let voice = voice ?? files.defaultVoice else {
            throw VoxportError(.user, "the bundle has no default voice (voice_default.npz): pass a voice from `voxport voice chatterbox`")
        }
        let pipeline = try ChatterboxPipeline(runner: CancellationCheckingRunner(wrapping: runner), files: files)
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
