import Foundation

/// Chatterbox Turbo's text front end, as `conversion/chatterbox_turbo/text.py` runs it with the
/// publisher's code: its own `punc_norm` (chatterbox/tts_turbo.py: Chatterbox's without the
/// "...", " - " and ";" replacements), then the bundle's tokenizer.json (GPT-2's byte-level BPE)
/// with nothing around the ids, and the long-text split to the T3 prefill's budget (packed
/// sentences, then clauses, words; never truncated).
public struct ChatterboxTurboText: Sendable {
    public static let emptyTextError = "chatterbox_turbo: the text is empty; give it something to say"

    public struct Chunk: Equatable, Sendable {
        /// After punc_norm.
        public let text: String
        /// The tokenizer's ids (no start or stop token).
        public let ids: [Int32]
    }

    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

    /// The bundle's `tokenizer.json`.
    public init(bundle: URL) throws {
        tokenizer = try Tokenizer(contentsOf: bundle.appendingPathComponent("tokenizer.json"))
    }

    /// chatterbox/tts_turbo.py's table.
    private static let norm = PuncNorm(replacing: [
        ("…", ", "), (":", ","), ("—", "-"), ("–", "-"), (" ,", ","), ("“", "\""), ("”", "\""),
        ("‘", "'"), ("’", "'"),
    ])

    /// The publisher's Turbo `punc_norm`, code point for code point.
    public static func puncNorm(_ text: String) -> String { norm(text) }

    /// `TurboTextTokenizer.ids`: the tokens of punc_norm(text), as `AutoTokenizer` gives them
    /// (the tokenizer's post-processor applied; GPT-2's adds nothing).
    public func ids(_ text: String) throws -> [Int32] { try tokenizer.encode(Self.puncNorm(text)) }

    /// `TurboTextTokenizer.chunks`: whole when it fits `budget` ids (normalised as given), else
    /// the split, each piece normalised and tokenised on its own.
    public func chunks(_ text: String, budget: Int) throws -> [Chunk] {
        if PythonText.strip(PythonText.scalars(text)).isEmpty { throw TextError(Self.emptyTextError) }
        let whole = try ids(text)
        if whole.count <= budget { return [Chunk(text: Self.puncNorm(text), ids: whole)] }
        let pieces = try TextSplit.splitToFit(text, mergeSentences: true) { try ids($0).count <= budget }
        return try pieces.map { Chunk(text: Self.puncNorm($0), ids: try ids($0)) }
    }
}
