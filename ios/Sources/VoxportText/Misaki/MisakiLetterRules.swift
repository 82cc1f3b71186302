import Foundation

/// Kokoro's shippable out-of-vocabulary fallback: letter-to-sound rules learned from misaki's own
/// lexicons, in place of misaki's espeak-ng (GPL-3). `conversion/kokoro/fallback/rules.py` is the
/// reference and says why; this reads the folder its `write_fallback` writes (the bundle's
/// `g2p/fallback/`) and answers exactly as it does, for `MisakiG2P`'s `fallback`.
///
/// A token's text: NFKD, ASCII letters lowercased and kept, apostrophes and every other
/// non-ASCII scalar dropped, any other ASCII scalar ends a word. A word with no vowel letter is
/// spelled with misaki's letter names (primary stress on the last); any other word reads each
/// letter by the widest context the table holds, then keeps exactly one primary stress. Words
/// are joined by a space; rating 2; `(nil, nil)` when no letter is left.
public struct MisakiLetterRules: Sendable {
    public static let fileName = "letter_rules.tsv"
    static let header = "# voxport letter rules v1 (misaki 0.9.4 us_gold+us_silver): context\\tchunk | LETTER\\tname\n"
    static let levels = 13
    static let edge = levels / 2
    static let pad = UInt8(ascii: "#")
    static let rating = 2
    static let primary: UInt32 = 0x2C8, secondary: UInt32 = 0x2CC
    /// misaki's `en.VOWELS`.
    static let vowels = Set("AIOQWYaiuæɑɒɔəɛɜɪʊʌᵻ".unicodeScalars.map(\.value))
    static let vowelLetters = Set("aeiouy".utf8)

    /// Context (ASCII letters and "#") -> the phoneme chunk its middle letter reads as.
    let rules: [[UInt8]: [UInt32]]
    /// Lowercase letter -> misaki's gold reading of the capital.
    let names: [UInt8: [UInt32]]

    public init(folder: URL) throws {
        let url = folder.appendingPathComponent(Self.fileName)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw MisakiLexiconError("no \(url.path): write it with conversion.kokoro.fallback.write_fallback")
        }
        let bytes = [UInt8](data)
        let head = Array(Self.header.utf8)
        guard bytes.starts(with: head), bytes.last == 0x0A else {
            throw MisakiLexiconError("\(url.path) is not a letter rules file (header or final newline missing); write it with conversion.kokoro.fallback.write_fallback")
        }
        var rules: [[UInt8]: [UInt32]] = [:]
        rules.reserveCapacity(bytes.count / 12)
        var names: [UInt8: [UInt32]] = [:]
        var at = head.count
        while at < bytes.count {
            let end = bytes[at...].firstIndex(of: 0x0A)!
            guard let tab = bytes[at..<end].firstIndex(of: 0x09), tab > at else {
                throw MisakiLexiconError("\(url.path): malformed line at byte \(at); rewrite it with write_fallback")
            }
            let key = Array(bytes[at..<tab])
            let value = PythonText.scalars(String(decoding: bytes[(tab + 1)..<end], as: UTF8.self))
            if key.count == 1, (0x41...0x5A).contains(key[0]) {
                names[key[0] + 0x20] = value
            } else {
                rules[key] = value
            }
            at = end + 1
        }
        guard names.count == 26 else {
            throw MisakiLexiconError("\(url.path) lacks letter names; rewrite it with write_fallback")
        }
        self.rules = rules
        self.names = names
    }

    /// misaki's `fallback=`: the token to `(phonemes, rating)`.
    public func callAsFunction(_ token: MisakiG2PToken) -> (phonemes: String?, rating: Int?) {
        read(token.text)
    }

    public var fallback: MisakiG2P.Fallback { { self($0) } }

    /// `LetterRules.__call__` on a token whose text is `text`.
    public func read(_ text: String) -> (phonemes: String?, rating: Int?) {
        let parts = Self.words(text).map(word).filter { !$0.isEmpty }
        if parts.isEmpty { return (nil, nil) }
        return (PythonText.string(PythonText.join(parts, 0x20)), Self.rating)
    }

    /// `words_of`: the lowercase a-z words of a token's text.
    static func words(_ text: String) -> [[UInt8]] {
        var words: [[UInt8]] = [], current: [UInt8] = []
        for scalar in text.decomposedStringWithCompatibilityMapping.unicodeScalars {
            let v = scalar.value
            if (0x41...0x5A).contains(v) || (0x61...0x7A).contains(v) {
                current.append(UInt8(v) | 0x20)
            } else if v == 0x27 || v >= 0x80 {
                continue
            } else if !current.isEmpty {
                words.append(current)
                current = []
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `LetterRules.word`: one lowercase a-z word's phonemes.
    func word(_ word: [UInt8]) -> [UInt32] {
        if !word.contains(where: { Self.vowelLetters.contains($0) }) { return spell(word) }
        let padded = [UInt8](repeating: Self.pad, count: Self.edge) + word + [UInt8](repeating: Self.pad, count: Self.edge)
        var out: [UInt32] = []
        for i in word.indices {
            for level in stride(from: Self.levels - 1, through: 0, by: -1) {
                let left = level / 2, right = level - level / 2
                let key = Array(padded[(Self.edge + i - left)...(Self.edge + i + right)])
                if let chunk = rules[key] {
                    out += chunk
                    break
                }
            }
        }
        return Self.onePrimary(out)
    }

    /// `LetterRules.spell`, as misaki's `get_NNP` stresses an acronym.
    func spell(_ word: [UInt8]) -> [UInt32] {
        var ps: [UInt32] = []
        for c in word { ps += names[c]! }
        ps = ps.filter { $0 != Self.secondary }.map { $0 == Self.primary ? Self.secondary : $0 }
        if let last = ps.lastIndex(of: Self.secondary) { ps[last] = Self.primary }
        return ps
    }

    /// `one_primary`: the last primary stays, earlier ones become secondary; with none, the
    /// first secondary is promoted, else the first vowel gets one.
    static func onePrimary(_ ps: [UInt32]) -> [UInt32] {
        if let last = ps.lastIndex(of: primary) {
            return ps[..<last].map { $0 == primary ? secondary : $0 } + ps[last...]
        }
        var out = ps
        if let first = out.firstIndex(of: secondary) {
            out[first] = primary
            return out
        }
        if let v = out.firstIndex(where: { vowels.contains($0) }) { out.insert(primary, at: v) }
        return out
    }
}
