/// misaki's `MToken` as `G2P.__call__` returns it: the token, its phonemes and its `_` fields.
public struct MisakiG2PToken: Sendable, Equatable {
    public var text: String
    public var tag: String
    public var whitespace: String
    /// nil where nothing read the word (misaki's `None`; the phoneme string then has `unk`).
    public var phonemes: String?
    public var startTs: Double?
    public var endTs: Double?
    /// `tk._.rating`.
    public var rating: Int?
    /// `tk.rating`: misaki's loop sets this attribute (not `_.rating`) on the words it reads
    /// one at a time and on the later pieces of a word read whole; kept to match it.
    public var ratingAttribute: Int?
    public var isHead: Bool
    public var alias: String?
    public var stress: Double?
    public var currency: String?
    public var numFlags: String
    public var prespace: Bool
}

/// The working form of an `MToken`: text and phonemes as scalars, so every comparison and
/// concatenation follows Python's `str` (code points) rather than Swift's canonical equivalence.
struct MToken {
    typealias Scalars = [UInt32]
    var text: Scalars
    var tag: String
    var whitespace: Scalars
    var phonemes: Scalars?
    var startTs: Double? = nil
    var endTs: Double? = nil
    var rating: Int? = nil
    var ratingAttribute: Int? = nil
    var isHead = true
    var alias: Scalars? = nil
    var stress: Double? = nil
    var currency: Scalars? = nil
    var numFlags: Scalars = []
    var prespace = false

    var lexiconToken: MisakiLexiconToken {
        MisakiLexiconToken(
            text: PythonText.string(text), alias: alias.map(PythonText.string), tag: tag, stress: stress,
            currency: currency.map(PythonText.string), isHead: isHead, numFlags: PythonText.string(numFlags))
    }

    var output: MisakiG2PToken {
        MisakiG2PToken(
            text: PythonText.string(text), tag: tag, whitespace: PythonText.string(whitespace),
            phonemes: phonemes.map(PythonText.string), startTs: startTs, endTs: endTs, rating: rating,
            ratingAttribute: ratingAttribute, isHead: isHead, alias: alias.map(PythonText.string), stress: stress,
            currency: currency.map(PythonText.string), numFlags: PythonText.string(numFlags), prespace: prespace)
    }

    /// misaki's `merge_tokens(tokens, unk)`: one token spanning `tokens` (non-empty); with `unk`
    /// nil the phonemes are None, else the pieces' phonemes (`unk` for a None) joined, a space
    /// before a piece marked `prespace`.
    static func merge(_ tokens: ArraySlice<MToken>, unk: Scalars?) -> MToken {
        let first = tokens.first!, last = tokens.last!
        var stresses: [Double] = []
        for tk in tokens { if let s = tk.stress, !stresses.contains(s) { stresses.append(s) } }
        let currency = tokens.compactMap(\.currency).max { $0.lexicographicallyPrecedes($1) }
        var phonemes: Scalars? = nil
        if let unk {
            var ps: Scalars = []
            for tk in tokens {
                if tk.prespace, let l = ps.last, !PythonText.isSpace(l), let p = tk.phonemes, !p.isEmpty { ps.append(0x20) }
                ps += tk.phonemes ?? unk
            }
            phonemes = ps
        }
        var text: Scalars = []
        for tk in tokens.dropLast() { text += tk.text + tk.whitespace }
        text += last.text
        // `max(key=...)` keeps the first of equal weights.
        var tag = first.tag, best = -1
        for tk in tokens {
            let weight = tk.text.reduce(0) { $0 + (PythonText.lower([$1]) == [$1] ? 1 : 2) }
            if weight > best { best = weight; tag = tk.tag }
        }
        let flags = Set(tokens.flatMap(\.numFlags)).sorted()
        let ratings = tokens.map(\.rating)
        return MToken(
            text: text, tag: tag, whitespace: last.whitespace, phonemes: phonemes, startTs: first.startTs,
            endTs: last.endTs, rating: ratings.contains(nil) ? nil : ratings.compactMap { $0 }.min(),
            isHead: first.isHead, alias: nil, stress: stresses.count == 1 ? stresses[0] : nil, currency: currency,
            numFlags: flags, prespace: first.prespace)
    }
}
