/// How the pre-tokenizers step through text: one Unicode scalar at a time, as the Rust
/// tokenizers do (a `char` is a scalar).
///
/// `graphemes` exists for the tests' deliberately wrong engine only (`EngineFlaw`): Swift's
/// `Character` is an extended grapheme cluster ("e" + U+0301, "\r\n", an emoji ZWJ sequence
/// are one each), and a tokenizer that steps by `Character` splits text where the publisher's
/// does not.
struct TextUnits {
    private let nextIndex: [Int]?
    private let previousIndex: [Int]?

    static let scalars = TextUnits(nextIndex: nil, previousIndex: nil)

    static func graphemes(of s: [UInt32]) -> TextUnits {
        var text = String.UnicodeScalarView()
        text.append(contentsOf: s.map { Unicode.Scalar($0)! })
        var next = Array(repeating: s.count, count: s.count + 1)
        var previous = Array(repeating: 0, count: s.count + 1)
        var at = 0
        for cluster in String(text) {
            let end = at + cluster.unicodeScalars.count
            for k in at..<end { next[k] = end }
            for k in (at + 1)...end { previous[k] = at }
            at = end
        }
        return TextUnits(nextIndex: next, previousIndex: previous)
    }

    func next(_ i: Int) -> Int { nextIndex?[i] ?? i + 1 }
    func previous(_ i: Int) -> Int { previousIndex?[i] ?? i - 1 }
}

/// A deliberately wrong engine, for the tests that prove the exactness tests can fail (each
/// flaw is a bug found in a published Swift tokenizer). Never set outside the tests.
enum EngineFlaw: Sendable {
    case none
    /// Steps through text by grapheme cluster (`Character`), not by scalar.
    case graphemeClusters
    /// Keys the vocabulary and merges by Swift `String`, which is equal for canonically
    /// equivalent strings ("é" == "e" + U+0301, KELVIN SIGN == "K"), so distinct tokens merge.
    case stringKeyedMerges
    /// Greedy longest vocabulary match instead of BPE merges by rank.
    case greedyLongestMatch
    /// Foundation's `precomposedStringWithCanonicalMapping` as the NFC (wrong on Linux; see
    /// `CanonicalComposition`).
    case foundationNFC
}
