import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// `Audio8Pipeline.speak`'s knobs: the utterance's seed (piece i draws from seed * 1000 + i),
/// the frame budget per piece (nil: the bundle's) and whether codec windows stream.
public struct Audio8SpeakOptions: Sendable {
    public var seed = 0
    public var maxFrames: Int? = nil
    /// true: a chunk per codec window as the frames arrive; false: a chunk per piece, decoded whole.
    public var stream = true
    public init() {}
}

/// Audio8 as a `Speaker`: text through `Audio8Text` (pieces that fit the KV rows, each piece's
/// TEXT segment through the bundle's tokenizer.json), each piece through the pipeline's own
/// streamed frame loop and codec windows, so the chunks laid end to end are
/// `Audio8Pipeline.speak`'s audio. The voice carries its transcript's ids already
/// (`voxport voice audio8_tts`).
public struct Audio8Speaker: Speaker {
    public static let tokenizerFile = "tokenizer.json"

    public let runner: any GraphRunner
    public let tables: Audio8Tables
    public let front: Audio8Text

    public init(runner: any GraphRunner, tables: Audio8Tables, tokenizer: Tokenizer) throws {
        // Refuses a bundle without Audio8's graphs now, not at the first speak.
        _ = try Audio8Pipeline(runner: runner, tables: tables)
        self.runner = runner
        self.tables = tables
        front = Audio8Text(tokenizer: tokenizer)
    }

    /// An opened (verified) bundle's host table and tokenizer over `runner`.
    public init(runner: any GraphRunner, bundle: ModelBundle) throws {
        try self.init(runner: runner, tables: try Audio8Tables.load(try bundle.fileURL(Audio8Tables.fileName)),
                      tokenizer: try Tokenizer(contentsOf: try bundle.fileURL(Self.tokenizerFile)))
    }

    public var model: String { "audio8_tts" }
    public var sampleRate: Int { tables.codec.sampleRate }

    public func makeOptions() -> sending Audio8SpeakOptions { Audio8SpeakOptions() }

    /// The pieces `speak` would say, with the ids of each one's TEXT segment.
    public func pieces(_ text: String, voice: Audio8Voice?, maxFrames: Int? = nil) throws -> [(text: String, ids: [Int32])] {
        try Audio8TextPieces.split(text, front: front, voice: voice, tables: tables, maxFrames: maxFrames ?? tables.frame.maxNewFrames)
            .map { ($0.text, $0.ids) }
    }

    /// `text` spoken piece by piece; `voice` nil: the plain prompt (no reference).
    public func speak(_ text: String, voice: Audio8Voice?, options: sending Audio8SpeakOptions) throws
        -> AsyncThrowingStream<SpeechChunk, any Error>
    {
        let pipeline = try Audio8Pipeline(runner: CancellationCheckingRunner(wrapping: runner), tables: tables)
        let budget = options.maxFrames ?? pipeline.defaultMaxFrames
        let pieces = try Audio8TextPieces.split(text, front: front, voice: voice, tables: tables, maxFrames: budget)
        _ = try pipeline.uniforms(seed: options.seed, piece: 0)  // a negative seed: the pipeline's error, now
        let (seed, stream, rate) = (options.seed, options.stream, sampleRate)
        return SpeechStream.make { continuation in
            for (i, piece) in pieces.enumerated() {
                try Task.checkCancellation()
                _ = try await pipeline.speakPiece(
                    piece.ids, voice: voice, seed: seed, piece: i, maxFrames: budget, stream: stream,
                    onAudio: { samples in
                        continuation.yield(SpeechChunk(samples: samples, sampleRate: rate, text: piece.text, piece: i, pieceCount: pieces.count))
                    })
            }
        }
    }
}
