import Foundation

/// Chatterbox Turbo's text front end, as `conversion/chatterbox_turbo/text.py` runs it with the
/// publisher's code: its own `punc_norm` (chatterbox/tts_turbo.py: Chatterbox's without the
/// "...", " - " and ";" replacements), then the bundle's tokenizer.json (GPT-2's byte-level BPE)
/// with nothing around the ids, and the long-text split to the T3 prefill's budget
/// (`BudgetedText.chunks`).
public struct ChatterboxTurboText: BudgetedText {
    public static let emptyTextError = "chatterbox_turbo: the text is empty; give it something to say"

    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

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
}
