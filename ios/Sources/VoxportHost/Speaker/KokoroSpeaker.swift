import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// `KokoroPipeline.speak`'s knobs: speed, the first chunk's seed (chunk i draws with seed + i)
/// and where the harmonic source's draws come from.
public struct KokoroSpeakOptions {
    public var speed: Double = 1.0
    public var seed: Int = 0
    public var noise: any SourceNoise = SplitMixNoise()
    /// Fold the harmonic source's -π phases to +π (`KokoroPipeline.foldNegativePi`): only to
    /// hold the audio against a reference made the same way (the end-to-end tests' Python one).
    public var foldNegativePi = false
    /// What Python warns about on the way (a word the G2P cannot say, skipped; a phoneme symbol
    /// outside the vocabulary, dropped), one message each, before any graph runs; default:
    /// standard error, as `voxport phonemize` prints them.
    public var onWarning: (String) -> Void = { FileHandle.standardError.write(Data(("warning: " + $0 + "\n").utf8)) }
    public init() {}
}

/// Kokoro as a `Speaker`, one chunk at a time.
///
/// `speak` takes TEXT: `KokoroTextChunker` (misaki's G2P in Swift, `MisakiEnglish`, over the
/// bundle's `g2p/` data, words in no lexicon read by the bundle's letter rules unless the caller
/// gives another fallback, and the chunker's rules of `text/chunks.py`) makes the chunks: a
/// bundle's Speaker says what `voxport speak kokoro TEXT --fallback rules` says (its phonemes:
/// `voxport phonemize kokoro TEXT --fallback rules`). Each
/// `SpeechChunk` carries the chunk's text and its words' times (the publisher's rule over the
/// predicted durations, `KokoroWordTimings`). `speak(phonemes:)` takes a ready phoneme string
/// (what `voxport phonemize kokoro "TEXT"` prints), each chunk's `text` its phonemes and no
/// words. Chunk i > 0 starts with the pause `KokoroAudio.join` puts between chunks, so the
/// chunks laid end to end are `KokoroPipeline.speak`'s audio, sample for sample.
public struct KokoroSpeaker: Speaker {
    /// `conversion/kokoro/cli.py`'s `DEFAULT_VOICE`.
    public static let defaultVoiceName = "jf_alpha"
    /// The bundle's folder of G2P data, laid out as `MisakiEnglish(folder:)` reads it.
    public static let g2pFolder = "g2p"

    public let runner: any GraphRunner
    public let vocab: KokoroVocab
    public let voices: VoiceLibrary
    public let source: HarmonicSource
    /// misaki's English G2P; nil: a bundle without `g2p/` (exported before it had one), which
    /// speaks phonemes only.
    public let english: MisakiEnglish?
    /// What misaki asks for a word its lexicon lacks (espeak-ng in the publisher's pipeline; a
    /// letter-to-sound rule set in an app). nil: misaki's `unk=""`, the word is skipped and
    /// named in a warning.
    public let fallback: KokoroFallback?
    /// The bundle a missing `english` was looked for in (the message names it).
    let bundleURL: URL?
    /// Why this bundle cannot read text (no `g2p/`, or no `g2p/fallback/` where its rules were
    /// asked for), said by `speak(text)`; its phonemes still speak.
    let textError: VoxportError?

    public init(
        runner: any GraphRunner, vocab: KokoroVocab, voices: VoiceLibrary, source: HarmonicSource,
        english: MisakiEnglish? = nil, fallback: KokoroFallback? = nil, bundleURL: URL? = nil, textError: VoxportError? = nil
    ) throws {
        // Refuses a bundle without Kokoro's graphs now, not at the first speak.
        _ = try KokoroPipeline(runner: runner, vocab: vocab, source: source)
        self.runner = runner
        self.vocab = vocab
        self.voices = voices
        self.source = source
        self.english = english
        self.fallback = fallback
        self.bundleURL = bundleURL
        self.textError = textError
    }

    /// An opened (verified) bundle's host files and G2P data over `runner`; words in no lexicon
    /// read by `fallback` (default: the bundle's letter rules, `g2p/fallback/`, so that the text
    /// path is `voxport speak kokoro --fallback rules`'s; `.skip` for none). A bundle without
    /// `g2p/` or its rules opens (its phonemes still speak); its `speak(text)` says how to get them.
    public init(runner: any GraphRunner, bundle: ModelBundle, fallback: KokoroFallbackChoice = .bundleRules) throws {
        let files = try KokoroBundleFiles.load(bundle)
        let hasG2P = FileManager.default.fileExists(atPath: bundle.url.appendingPathComponent(Self.g2pFolder).path)
        var english: MisakiEnglish?
        var chosen: KokoroFallback?
        var textError: VoxportError?
        if !hasG2P {
            textError = KokoroTextChunker.missingG2P(bundle.url)
        } else {
            do {
                chosen = try fallback.resolve(bundle.url)
                english = try KokoroTextChunker.loadEnglish(bundle.url)
            } catch let e as VoxportError where e.kind == .user {
                textError = e  // a bundle exported before g2p/fallback/
            }
        }
        try self.init(
            runner: runner, vocab: files.vocab, voices: files.voices, source: files.source, english: english, fallback: chosen,
            bundleURL: bundle.url, textError: textError)
    }

    public var model: String { "kokoro" }
    public var sampleRate: Int { KokoroAudio.sampleRate }

    public func makeOptions() -> sending KokoroSpeakOptions { KokoroSpeakOptions() }

    /// The text chunker at this bundle's largest token bucket (`KokoroPipeline.chunks(text)`).
    public func textChunker() throws -> KokoroTextChunker {
        guard let english else {
            throw textError ?? KokoroTextChunker.missingG2P(bundleURL ?? URL(fileURLWithPath: "this Kokoro bundle"))
        }
        let pipeline = try KokoroPipeline(runner: runner, vocab: vocab, source: source)
        return try KokoroTextChunker(english: english, fallback: fallback, vocab: vocab, maxIDs: pipeline.maxChunkIDs)
    }

    /// The chunks `speak(text)` would say, with Python's warnings (`voxport phonemize kokoro`).
    public func chunks(_ text: String) throws -> (chunks: [KokoroChunk], warnings: [String]) {
        try textChunker().chunks(text)
    }

    /// `text` spoken chunk by chunk, each with its words' times; `voice` nil: the bundle's
    /// `jf_alpha`. Bad text throws here, with Python's words, before any graph call.
    public func speak(_ text: String, voice: VoicePack?, options: sending KokoroSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let chunker = try textChunker()
        let (chunks, warnings) = try chunker.chunks(text)
        warnings.forEach(options.onWarning)
        return try stream(chunks, resplit: chunker, voice: voice, options: options)
    }

    /// `phonemes` spoken chunk by chunk (each chunk's `text` its phonemes, no words timed).
    public func speak(phonemes: String, voice: VoicePack?, options: sending KokoroSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let pipeline = try KokoroPipeline(runner: runner, vocab: vocab, source: source)
        pipeline.onWarning = options.onWarning
        // The pipeline's own checks and wording, before any graph call.
        let chunks = try pipeline.chunks(phonemes)
        guard !chunks.isEmpty else {
            throw VoxportError(.user, "nothing to say: \(PythonRepr.string(phonemes)) has no phoneme that makes a sound")
        }
        return try stream(chunks, resplit: nil, voice: voice, options: options)
    }

    func stream(_ chunks: [KokoroChunk], resplit: KokoroTextChunker?, voice: VoicePack?, options: sending KokoroSpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let pack = try voice ?? voices.voice(Self.defaultVoiceName)
        let pipeline = try KokoroPipeline(runner: CancellationCheckingRunner(wrapping: runner), vocab: vocab, source: source)
        pipeline.foldNegativePi = options.foldNegativePi
        pipeline.onWarning = options.onWarning
        pipeline.textChunker = resplit
        let rate = sampleRate
        let gap = KokoroAudio.join([[], []]).count
        return SpeechStream.make { continuation in
            for (i, chunk) in chunks.enumerated() {
                try Task.checkCancellation()
                // A chunk whose frames outgrow every bucket comes back in parts, joined as
                // `KokoroPipeline.speak` joins every part of the utterance.
                let parts = try await pipeline.speakChunk(
                    chunk, voice: pack, speed: options.speed, noise: options.noise, seed: options.seed + i)
                let audio = KokoroAudio.join((i > 0 ? [[]] : []) + parts.map(\.audio))
                let words = resplit == nil ? nil : Self.words(parts, startingAt: i > 0 ? gap : 0, gap: gap, sampleRate: rate)
                continuation.yield(
                    SpeechChunk(
                        samples: audio, sampleRate: rate, text: resplit == nil ? chunk.phonemes : chunk.text, piece: i,
                        pieceCount: chunks.count, words: words))
            }
        }
    }

    /// `pipeline.utterance_words` over one chunk's parts: each part's words placed after the
    /// audio before it and the pause between parts, in seconds from the chunk's first sample
    /// (which, after the first chunk, is the pause before it).
    static func words(_ parts: [KokoroChunkResult], startingAt first: Int, gap: Int, sampleRate: Int) -> [WordTiming] {
        var at = first
        var out: [WordTiming] = []
        for (k, part) in parts.enumerated() {
            if k > 0 { at += gap }
            let seconds = Double(at) / Double(sampleRate)
            out += part.words.map { WordTiming(word: $0.word, start: $0.start + seconds, end: $0.end + seconds) }
            at += part.audio.count
        }
        return out
    }
}
