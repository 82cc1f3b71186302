import Foundation

/// Chatterbox's text front end, as `conversion/chatterbox/text.py` runs it with the publisher's
/// code: `punc_norm` (chatterbox/tts.py), `EnTokenizer.encode` (spaces as `[SPACE]`, then the
/// bundle's tokenizer.json), `[START]` + ids + `[STOP]`, and the long-text split to the T3
/// prefill's budget (`BudgetedText.chunks`).
public struct ChatterboxText: BudgetedText {
    /// `weights.START_TEXT` / `STOP_TEXT`: the ids the Python host puts around every chunk (the
    /// publisher's tokenizer.json has `[START]` at 255 and `[STOP]` at 0).
    public static let startText: Int32 = 255
    public static let stopText: Int32 = 0
    public static let emptyTextError = "chatterbox: the text is empty; give it something to say"

    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

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
}
