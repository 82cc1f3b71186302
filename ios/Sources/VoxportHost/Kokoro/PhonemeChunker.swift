import VoxportCore

/// One utterance: its phoneme string (what the voice row counts) and its ids with pads; from
/// text (`KokoroTextChunker`), also the text it says and the G2P tokens its phonemes come from
/// (what its words are timed over: none for a chunk made from phonemes or cut out of one word).
public struct KokoroChunk: Equatable, Sendable {
    public let phonemes: String
    public let ids: [Int32]
    public let text: String
    public let tokens: [KokoroWordToken]

    public init(phonemes: String, ids: [Int32], text: String = "", tokens: [KokoroWordToken] = []) {
        self.phonemes = phonemes
        self.ids = ids
        self.text = text
        self.tokens = tokens
    }

    /// `len(phonemes)` in code points: the voice row is `pack[nPhonemes - 1]`.
    public var nPhonemes: Int { phonemes.unicodeScalars.count }
}

/// A phoneme string split into chunks of at most `maxIDs` ids (pads included), as
/// `conversion/kokoro/text/phoneme_split.py` does with the chunker's rules: sentences (after
/// `. ! ? …`, closing marks kept), then clauses (after `, ; : —`) packed greedily, then words,
/// then a word cut by symbol; chunks with nothing to say are left out.
public struct PhonemeChunker: Sendable {
    static let openers = Set("(“«".unicodeScalars)
    static let marks = KokoroTextChunker.sentenceEnds.union(KokoroTextChunker.clauseEnds)
        .union(KokoroTextChunker.closers).union(openers)

    struct Token {
        let phonemes: [Unicode.Scalar]
        let spaced: Bool
    }

    public let maxIDs: Int
    public let vocab: KokoroVocab

    public init(maxIDs: Int, vocab: KokoroVocab) throws {
        guard maxIDs >= 3 else {
            throw VoxportError(.user, "max_ids must leave room for a phoneme between the pads: \(maxIDs)")
        }
        self.maxIDs = maxIDs
        self.vocab = vocab
    }

    /// The chunks, with the warnings of symbols the vocabulary drops (one per chunk). The
    /// phoneme string's words go through the text chunker's own rules (`KokoroTextChunker`'s
    /// `splitAfter` / `pack`), as `phoneme_split.py` runs `chunks.py`'s on its tokens.
    public func split(_ phonemes: String) -> (chunks: [KokoroChunk], warnings: [String]) {
        let budget = maxIDs - 2
        var chunks: [KokoroChunk] = []
        var warnings: [String] = []
        let words = Self.tokens(phonemes).map {
            let p = String(String.UnicodeScalarView($0.phonemes))
            return KokoroWordToken(text: p, phonemes: p, whitespace: $0.spaced ? " " : "")
        }
        for sentence in KokoroTextChunker.splitAfter(words, KokoroTextChunker.sentenceEnds) {
            for piece in KokoroTextChunker.pack([sentence], budget, 0) {
                let (ids, warning) = vocab.encode(piece.phonemes)
                if let warning { warnings.append(warning) }
                if vocab.hasSpeech(ids) { chunks.append(KokoroChunk(phonemes: piece.phonemes, ids: ids)) }
            }
        }
        return (chunks, warnings)
    }

    static func isSpace(_ s: Unicode.Scalar) -> Bool { s.properties.isWhitespace }

    /// `phoneme_tokens`: a mark is a token of its own, a run of other symbols is a word;
    /// trailing spaces mark it.
    static func tokens(_ text: String) -> [Token] {
        let s = Array(text.unicodeScalars)
        var out: [Token] = []
        var i = 0
        while i < s.count, isSpace(s[i]) { i += 1 }
        while i < s.count {
            var j = i + 1
            if !marks.contains(s[i]) {
                while j < s.count, !isSpace(s[j]), !marks.contains(s[j]) { j += 1 }
            }
            var k = j
            while k < s.count, isSpace(s[k]) { k += 1 }
            out.append(Token(phonemes: Array(s[i..<j]), spaced: k > j))
            i = k
        }
        return out
    }
}
