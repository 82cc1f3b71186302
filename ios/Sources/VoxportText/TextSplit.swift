/// `conversion/core/host/text_split.py`'s `split_to_fit`: text in pieces that each fit a
/// model's budget, at sentence ends (after `. ! ? …`, or one of those and a closing quote or
/// bracket), then clauses (after `, ; : —`), then words, then characters (scalars). Nothing
/// is dropped: the pieces joined by single spaces are the text with its whitespace collapsed.
public enum TextSplit {
    static let sentenceEnds: Set<UInt32> = [0x2E, 0x21, 0x3F, 0x2026]
    static let closers: Set<UInt32> = [0x22, 0x27, 0x29, 0x5D]
    static let clauseEnds: Set<UInt32> = [0x2C, 0x3B, 0x3A, 0x2014]

    public static func splitToFit(_ text: String, mergeSentences: Bool = false, fits: (String) throws -> Bool) throws -> [String] {
        let collapsed = PythonText.collapseSpaces(PythonText.scalars(text))
        if collapsed.isEmpty { return [] }
        func fitsScalars(_ s: [UInt32]) throws -> Bool { try fits(PythonText.string(s)) }
        func words(_ clause: [UInt32]) throws -> [[UInt32]] {
            try pack(cut(clause) { _, _ in true }, fitsScalars) { try byCharacters($0, fitsScalars) }
        }
        func clauses(_ sentence: [UInt32]) throws -> [[UInt32]] {
            try pack(cut(sentence) { s, k in k > 0 && clauseEnds.contains(s[k - 1]) }, fitsScalars, words)
        }
        // The collapsed text has single spaces only, so Python's `\s+` after a lookbehind is
        // one space; re.split drops it.
        let sentences = cut(collapsed) { s, k in
            (k > 0 && sentenceEnds.contains(s[k - 1])) || (k > 1 && closers.contains(s[k - 1]) && sentenceEnds.contains(s[k - 2]))
        }.filter { !$0.isEmpty }
        let pieces: [[UInt32]]
        if mergeSentences {
            pieces = try pack(sentences, fitsScalars, clauses)
        } else {
            pieces = try sentences.flatMap { try fitsScalars($0) ? [$0] : clauses($0) }
        }
        return pieces.map(PythonText.string)
    }

    /// The text cut at every space at index k where `at(text, k)` holds, the space dropped.
    private static func cut(_ s: [UInt32], at: ([UInt32], Int) -> Bool) -> [[UInt32]] {
        var out: [[UInt32]] = []
        var start = 0
        for k in s.indices where s[k] == 0x20 && at(s, k) {
            out.append(Array(s[start..<k]))
            start = k + 1
        }
        out.append(Array(s[start...]))
        return out
    }

    /// `_pack`: parts joined by spaces while they fit; a part that does not fit alone goes to
    /// `finer`.
    private static func pack(
        _ parts: [[UInt32]], _ fits: ([UInt32]) throws -> Bool, _ finer: ([UInt32]) throws -> [[UInt32]]
    ) rethrows -> [[UInt32]] {
        var out: [[UInt32]] = []
        var current: [UInt32] = []
        for part in parts {
            let candidate = current.isEmpty ? part : current + [0x20] + part
            if try fits(candidate) {
                current = candidate
                continue
            }
            if !current.isEmpty { out.append(current) }
            if try fits(part) {
                current = part
            } else {
                out += try finer(part)
                current = []
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// `_by_characters`: a word cut by code points.
    private static func byCharacters(_ word: [UInt32], _ fits: ([UInt32]) throws -> Bool) rethrows -> [[UInt32]] {
        var out: [[UInt32]] = []
        var current: [UInt32] = []
        for c in word {
            if !current.isEmpty, try !fits(current + [c]) {
                out.append(current)
                current = []
            }
            current.append(c)
        }
        if !current.isEmpty { out.append(current) }
        return out
    }
}
