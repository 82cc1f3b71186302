import Foundation
import VoxportCore
import VoxportRunner

/// `KokoroPipeline.speak`'s knobs: speed, the first chunk's seed (chunk i draws with seed + i)
/// and where the harmonic source's draws come from.
public struct KokoroSpeakOptions {
    public var speed: Double = 1.0
    public var seed: Int = 0
    public var noise: any SourceNoise = SplitMixNoise()
    /// Fold the harmonic source's -π phases to +π (`KokoroPipeline.foldNegativePi`): only to
    /// hold the audio against a reference made the same way (the end-to-end tests' Python one).
    public var foldNegativePi = false
    public init() {}
}

/// Kokoro as a `Speaker`, one chunk at a time.
///
/// Takes PHONEMES, not text: Kokoro's G2P (misaki) has no Swift port yet (its own issue), so
/// `speak`'s text is what `voxport phonemize kokoro "TEXT"` prints, and each chunk's `text` is
/// its phonemes. Chunk i > 0 starts with the pause `KokoroAudio.join` puts between chunks, so
/// the chunks laid end to end are `KokoroPipeline.speak`'s audio, sample for sample.
public struct KokoroSpeaker: Speaker {
    /// `conversion/kokoro/cli.py`'s `DEFAULT_VOICE`.
    public static let defaultVoiceName = "jf_alpha"

    public let runner: any GraphRunner
    public let vocab: KokoroVocab
    public let voices: VoiceLibrary
    public let source: HarmonicSource

    public init(runner: any GraphRunner, vocab: KokoroVocab, voices: VoiceLibrary, source: HarmonicSource) throws {
        // Refuses a bundle without Kokoro's graphs now, not at the first speak.
        _ = try KokoroPipeline(runner: runner, vocab: vocab, source: source)
        self.runner = runner
        self.vocab = vocab
        self.voices = voices
        self.source = source
    }

    /// An opened (verified) bundle's host files over `runner`.
    public init(runner: any GraphRunner, bundle: ModelBundle) throws {
        let files = try KokoroBundleFiles.load(bundle)
        try self.init(runner: runner, vocab: files.vocab, voices: files.voices, source: files.source)
    }

    public var model: String { "kokoro" }
    public var sampleRate: Int { KokoroAudio.sampleRate }

    public func makeOptions() -> sending KokoroSpeakOptions { KokoroSpeakOptions() }

    /// `phonemes` spoken chunk by chunk; `voice` nil: the bundle's `jf_alpha`.
    public func speak(_ phonemes: String, voice: VoicePack?, options: sending KokoroSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let pipeline = try KokoroPipeline(runner: CancellationCheckingRunner(wrapping: runner), vocab: vocab, source: source)
        pipeline.foldNegativePi = options.foldNegativePi
        // The pipeline's own checks and wording, before any graph call.
        let chunks = try pipeline.chunks(phonemes)
        guard !chunks.isEmpty else {
            throw VoxportError(.user, "nothing to say: \(PythonRepr.string(phonemes)) has no phoneme that makes a sound")
        }
        let pack = try voice ?? voices.voice(Self.defaultVoiceName)
        let rate = sampleRate
        return SpeechStream.make { continuation in
            for (i, chunk) in chunks.enumerated() {
                try Task.checkCancellation()
                // A chunk whose frames outgrow every bucket comes back in parts, joined as
                // `KokoroPipeline.speak` joins every part of the utterance.
                let parts = try await pipeline.speakChunk(
                    chunk, voice: pack, speed: options.speed, noise: options.noise, seed: options.seed + i)
                let audio = KokoroAudio.join((i > 0 ? [[]] : []) + parts.map(\.audio))
                continuation.yield(SpeechChunk(samples: audio, sampleRate: rate, text: chunk.phonemes, piece: i, pieceCount: chunks.count))
            }
        }
    }
}
