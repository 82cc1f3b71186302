/// One piece of a spoken utterance, handed out as soon as it is ready: the Swift twin of
/// `core/speak.py`'s `SpeakListener.audio(piece)`. The chunks of one `speak` laid end to end are the
/// utterance the model's pipeline gives for the same text, voice and options.
public struct SpeechChunk: Sendable, Equatable {
    /// Float32 mono at `sampleRate`.
    public let samples: [Float]
    public let sampleRate: Int
    /// The text piece this audio belongs to, as the model's front end spoke it (Chatterbox:
    /// after punc_norm; Audio8: whitespace collapsed; Kokoro: the chunk's text, or its phonemes
    /// when it was spoken from phonemes). Several
    /// chunks carry the same piece where a model streams inside one (Audio8's codec windows).
    public let text: String
    /// Which piece (0-based) of `pieceCount`: what Python's `on_progress(done, total, what)` counts.
    public let piece: Int
    public let pieceCount: Int
    /// When each word is said, where the model gives it (Kokoro from text: the publisher's rule
    /// over the predicted durations); nil where it does not (Chatterbox, Audio8, Kokoro from
    /// phonemes), so an app can tell "none" from "no words".
    public let words: [WordTiming]?

    public init(samples: [Float], sampleRate: Int, text: String, piece: Int, pieceCount: Int, words: [WordTiming]? = nil) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.text = text
        self.piece = piece
        self.pieceCount = pieceCount
        self.words = words
    }
}

/// One word's place in the audio of its chunk, in seconds from the chunk's first sample.
public struct WordTiming: Sendable, Equatable {
    public let word: String
    public let start: Double
    public let end: Double

    public init(word: String, start: Double, end: Double) {
        self.word = word
        self.start = start
        self.end = end
    }
}

/// Text to streamed speech over one bundle and one runner: the Swift twin of Python's
/// `SpeakingPipeline` (`conversion/core/speak.py`). `KokoroSpeaker`, `ChatterboxSpeaker`,
/// `ChatterboxTurboSpeaker` and `Audio8Speaker` conform; `BundleSpeaker.open` gives the right one for any bundle folder.
///
/// `speak` checks the text first (bad text throws at the call, with Python's wording, before any
/// graph runs), then computes in a task of its own and yields each chunk as it is ready.
/// Ending the iteration early (a cancelled consumer, a dropped stream) cancels that task, and it
/// stops before its next graph call. One `speak` at a time per runner: graph state (KV caches)
/// lives in the runner, so two utterances streaming at once over one runner would interleave it.
public protocol Speaker: Sendable {
    /// The model's voice (a style pack, a conditioning, reference codes); nil: the bundle's default.
    associatedtype Voice: Sendable
    /// The model's knobs and draws (Python's `SpeakOptions` dataclass per model). `sending`, not
    /// `Sendable`: options may carry the caller's own draw source (a recording, in the tests),
    /// which moves into the speaking task.
    associatedtype Options

    /// The manifest's model name (`kokoro`, `chatterbox`, `chatterbox_turbo`, `audio8_tts`).
    var model: String { get }
    var sampleRate: Int { get }

    /// The model's default options, as `voxport speak MODEL` uses them with no flags.
    func makeOptions() -> sending Options

    func speak(_ text: String, voice: Voice?, options: sending Options) throws -> AsyncThrowingStream<SpeechChunk, any Error>
}

extension Speaker {
    /// The default voice and options: callable on `any Speaker`, whatever the model.
    public func speak(_ text: String) throws -> AsyncThrowingStream<SpeechChunk, any Error> {
        try speak(text, voice: nil, options: makeOptions())
    }
}
