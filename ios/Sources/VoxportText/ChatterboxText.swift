import Foundation

/// Chatterbox's text front end, as `conversion/chatterbox/text.py` runs it with the publisher's
/// code: `punc_norm` (chatterbox/tts.py), `EnTokenizer.encode` (spaces as `[SPACE]`, then the
/// bundle's tokenizer.json), `[START]` + ids + `[STOP]`, and the long-text split to the T3
/// prefill's budget (packed sentences, then clauses, words; never truncated).
public struct ChatterboxText: Sendable {
    /// `weights.START_TEXT` / `STOP_TEXT`: the ids the Python host puts around every chunk (the
    /// publisher's tokenizer.json has `[START]` at 255 and `[STOP]` at 0).
    public static let startText: Int32 = 255
    public static let stopText: Int32 = 0
    public static let emptyTextError = "chatterbox: the text is empty; give it something to say"

    public struct Chunk: Equatable, Sendable {
        /// After punc_norm.
        public let text: String
        /// SOT + tokens + EOT.
        public let ids: [Int32]
    }

    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

    /// The bundle's `tokenizer.json`.
    public init(bundle: URL) throws {
        tokenizer = try Tokenizer(contentsOf: bundle.appendingPathComponent("tokenizer.json"))
    }

    /// chatterbox/tts.py's table.
    private static let norm = PuncNorm(replacing: [
        ("...", ", "), ("…", ", "), (":", ","), (" - ", ", "), (";", ", "), ("—", "-"), ("–", "-"),
        (" ,", ","), ("“", "\""), ("”", "\""), ("‘", "'"), ("’", "'"),
    ])

    /// The publisher's `punc_norm`, code point for code point.
    public static func puncNorm(_ text: String) -> String { norm(text) }

    /// `TextTokenizer.ids`: SOT + the tokens of punc_norm(text) + EOT.
    public func ids(_ text: String) throws -> [Int32] {
        let spaced = PythonText.replace(PythonText.scalars(Self.puncNorm(text)), [0x20], PythonText.scalars("[SPACE]"))
        return [Self.startText] + (try tokenizer.encode(PythonText.string(spaced))) + [Self.stopText]
    }

    /// `TextTokenizer.chunks`: whole when it fits `budget` ids (normalised as given), else the
    /// split, each piece normalised and tokenised on its own.
    public func chunks(_ text: String, budget: Int) throws -> [Chunk] {
        if PythonText.strip(PythonText.scalars(text)).isEmpty { throw TextError(Self.emptyTextError) }
        let whole = try ids(text)
        if whole.count <= budget { return [Chunk(text: Self.puncNorm(text), ids: whole)] }
        let pieces = try TextSplit.splitToFit(text, mergeSentences: true) { try ids($0).count <= budget }
        return try pieces.map { Chunk(text: Self.puncNorm($0), ids: try ids($0)) }
    }
}
