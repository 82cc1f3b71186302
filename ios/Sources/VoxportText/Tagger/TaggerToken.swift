/// One token as spaCy's tokenizer gives it to the tagger: its text, whether whitespace follows
/// it (`token.whitespace_`), and the NORM a tokenizer special case set on the token itself
/// ("n't" -> "not", "gon" -> "going"); nil means the lexeme's norm.
public struct TaggerToken: Sendable, Equatable {
    public var text: String
    public var spaceAfter: Bool
    public var norm: String?

    public init(_ text: String, spaceAfter: Bool, norm: String? = nil) {
        self.text = text
        self.spaceAfter = spaceAfter
        self.norm = norm
    }
}
