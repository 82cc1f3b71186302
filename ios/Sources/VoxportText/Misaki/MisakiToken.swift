/// What misaki's `Lexicon.__call__` reads from an `MToken`.
public struct MisakiLexiconToken: Sendable {
    public var text: String
    /// `tk._.alias` (misaki sets "to" for a "2" between letters); read instead of `text`.
    public var alias: String?
    /// spaCy's fine-grained tag (`tk.tag`).
    public var tag: String
    /// `tk._.stress`: a `[word](stress)` mark's value, applied last.
    public var stress: Double?
    /// `tk._.currency`: "$", "£" or "€" when a currency symbol precedes this number token.
    public var currency: String?
    /// `tk._.is_head`: false for a later piece of a word split by misaki's sub-token regex.
    public var isHead: Bool
    /// `tk._.num_flags`: a `[word](#flags)` mark's letters for the number reader ("a": "one"
    /// as "ə", "&": keep "and", "n": "and" as "ən" on the word before).
    public var numFlags: String

    public init(
        text: String, alias: String? = nil, tag: String, stress: Double? = nil, currency: String? = nil, isHead: Bool = true,
        numFlags: String = ""
    ) {
        self.text = text
        self.alias = alias
        self.tag = tag
        self.stress = stress
        self.currency = currency
        self.isHead = isHead
        self.numFlags = numFlags
    }
}

/// misaki's `TokenContext`: what the words to the right (already read) say about this one.
public struct MisakiTokenContext: Sendable, Equatable {
    /// Whether the next sound is a vowel (nil: unknown, or punctuation next).
    public var futureVowel: Bool?
    /// Whether the next word is "to".
    public var futureTo: Bool

    public init(futureVowel: Bool? = nil, futureTo: Bool = false) {
        self.futureVowel = futureVowel
        self.futureTo = futureTo
    }
}

/// `Lexicon.__call__`'s answer.
public enum MisakiLexiconAnswer: Sendable, Equatable {
    /// `(phonemes, rating)` as misaki returns them; `(nil, nil)` for a word it cannot read.
    case word(phonemes: String?, rating: Int?)
    /// misaki reads this token through `get_number`, which raises here (num2words'
    /// OverflowError at 10^306 and beyond, a float Python cannot convert).
    case number
}
