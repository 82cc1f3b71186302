/// The token attributes spaCy's tok2vec embeds (`doc.to_array(attrs)`), as ids: a string
/// attribute is spaCy's hash of the string, a flag is 0 or 1. Lexeme attributes are computed
/// from the text as `spacy.lang.lex_attrs` does, over Unicode scalars (Python's characters).
struct LexemeFeatures: Sendable {
    enum Attribute: String, Sendable { case norm = "NORM", prefix = "PREFIX", suffix = "SUFFIX", shape = "SHAPE", spacy = "SPACY", isSpace = "IS_SPACE" }

    let attributes: [Attribute]
    let strings: SpacyStringIDs
    /// The vocab's NORM lookups, first consulted first: spaCy string id of the orth -> norm.
    let normTables: [[UInt64: String]]

    /// One id per attribute, in `attributes` order.
    func ids(_ token: TaggerToken) -> [UInt64] {
        let scalars = PythonText.scalars(token.text)
        return attributes.map { attribute in
            switch attribute {
            case .norm: return strings.id(token.norm ?? norm(token.text, scalars))
            case .prefix: return strings.id(PythonText.string(Array(scalars.prefix(1))))
            case .suffix: return strings.id(PythonText.string(Array(scalars.suffix(3))))
            case .shape: return strings.id(PythonText.string(Self.shape(scalars)))
            case .spacy: return token.spaceAfter ? 1 : 0
            case .isSpace: return !scalars.isEmpty && scalars.allSatisfy(PythonText.isSpace) ? 1 : 0
            }
        }
    }

    /// The lexeme's NORM: the first table holding the text, else `text.lower()`.
    func norm(_ text: String, _ scalars: [UInt32]) -> String {
        let key = strings.id(text)
        for table in normTables { if let norm = table[key] { return norm } }
        return PythonText.string(PythonText.lower(scalars))
    }

    /// `spacy.lang.lex_attrs.word_shape`: letters X/x, digits d, anything else itself, runs of
    /// one shape character cut at four; "LONG" from 100 characters.
    static func shape(_ s: [UInt32]) -> [UInt32] {
        if s.count >= 100 { return PythonText.scalars("LONG") }
        var out: [UInt32] = []
        var last: UInt32? = nil
        var run = 0
        for c in s {
            let shape: UInt32
            if PythonText.isAlpha(c) {
                shape = PythonText.isUpper(c) ? 0x58 : 0x78
            } else if PythonText.isDigit(c) {
                shape = 0x64
            } else {
                shape = c
            }
            if shape == last {
                run += 1
            } else {
                run = 0
                last = shape
            }
            if run < 4 { out.append(shape) }
        }
        return out
    }
}
