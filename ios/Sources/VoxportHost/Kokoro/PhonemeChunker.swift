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
    static let sentenceEnds = Set(".!?…".unicodeScalars)
    static let clauseEnds = Set(",;:—".unicodeScalars)
    static let closers = Set(")”»'’".unicodeScalars)
    static let openers = Set("(“«".unicodeScalars)
    static let marks = sentenceEnds.union(clauseEnds).union(closers).union(openers)

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

    /// The chunks, with the warnings of symbols the vocabulary drops (one per chunk).
    public func split(_ phonemes: String) -> (chunks: [KokoroChunk], warnings: [String]) {
        let budget = maxIDs - 2
        var chunks: [KokoroChunk] = []
        var warnings: [String] = []
        for sentence in Self.splitAfter(Self.tokens(phonemes), Self.sentenceEnds) {
            for piece in Self.pack([sentence], budget, 0) {
                let text = String(String.UnicodeScalarView(piece))
                let (ids, warning) = vocab.encode(text)
                if let warning { warnings.append(warning) }
                if vocab.hasSpeech(ids) { chunks.append(KokoroChunk(phonemes: text, ids: ids)) }
            }
        }
        return (chunks, warnings)
    }

    static func isSpace(_ s: Unicode.Scalar) -> Bool { s.properties.isWhitespace }

    /// A mark is a token of its own, a run of other symbols is a word; trailing spaces mark it.
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

    /// `tokens_phonemes`: each token's phonemes, one space where it had whitespace, trimmed.
    static func phonemes(_ tokens: ArraySlice<Token>) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        for t in tokens {
            out += t.phonemes
            if t.spaced { out.append(" ") }
        }
        return strip(out[...])
    }

    static func strip(_ s: ArraySlice<Unicode.Scalar>) -> [Unicode.Scalar] {
        var lo = s.startIndex, hi = s.endIndex
        while lo < hi, isSpace(s[lo]) { lo += 1 }
        while hi > lo, isSpace(s[hi - 1]) { hi -= 1 }
        return Array(s[lo..<hi])
    }

    static func madeOf(_ t: Token, _ set: Set<Unicode.Scalar>) -> Bool {
        let p = strip(t.phonemes[...])
        return !p.isEmpty && p.allSatisfy { set.contains($0) }
    }

    /// `split_after`: groups closed after a run of end marks (and the closers after them).
    static func splitAfter(_ tokens: [Token], _ ends: Set<Unicode.Scalar>) -> [[Token]] {
        var groups: [[Token]] = []
        var current: [Token] = []
        var inTail = false
        for (i, t) in tokens.enumerated() {
            current.append(t)
            if madeOf(t, ends) {
                inTail = true
            } else if !(inTail && madeOf(t, closers)) {
                inTail = false
            }
            let next = i + 1 < tokens.count ? tokens[i + 1] : nil
            if inTail, next.map({ !(madeOf($0, ends) || madeOf($0, closers)) }) ?? true {
                groups.append(current)
                current = []
                inTail = false
            }
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }

    static func fits(_ tokens: [Token], _ budget: Int) -> Bool { phonemes(tokens[...]).count <= budget }

    /// `_pack`: consecutive groups packed greedily under `budget`.
    static func pack(_ groups: [[Token]], _ budget: Int, _ level: Int) -> [[Unicode.Scalar]] {
        var pieces: [[Unicode.Scalar]] = []
        var current: [Token] = []
        for group in groups {
            if fits(current + group, budget) {
                current += group
                continue
            }
            if !current.isEmpty { pieces.append(phonemes(current[...])) }
            current = []
            if fits(group, budget) {
                current = group
            } else {
                pieces += splitLong(group, budget, level)
            }
        }
        if !current.isEmpty { pieces.append(phonemes(current[...])) }
        return pieces
    }

    /// `_split_long`: clauses, then words, then the phonemes cut every `budget` symbols.
    static func splitLong(_ group: [Token], _ budget: Int, _ level: Int) -> [[Unicode.Scalar]] {
        if level < 2 {
            let finer = level == 0 ? splitAfter(group, clauseEnds) : group.map { [$0] }
            if finer.count > 1 { return pack(finer, budget, level + 1) }
            return splitLong(group, budget, level + 1)
        }
        let ps = phonemes(group[...])
        return stride(from: 0, to: ps.count, by: budget).map { strip(ps[$0..<min($0 + budget, ps.count)]) }
    }
}
