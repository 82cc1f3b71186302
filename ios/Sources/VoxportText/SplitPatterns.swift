/// The pre-tokenizer regexes of the tokenizers this module reads, as matchers over Unicode
/// scalars that follow the regex engines' backtracking order alternative by alternative.
///
/// A tokenizer.json names its regex as text; only the patterns below are known (compared as
/// strings), and any other is refused by name, never approximated. Each matcher returns the
/// matches' half-open scalar ranges, leftmost first, as `find_iter` does.
enum SplitPattern: Equatable {
    /// GPT-2's (ByteLevel's `use_regex`; Oniguruma).
    case gpt2
    /// Qwen2's Split regex (Oniguruma).
    case qwen2
    /// The Whitespace pre-tokenizer's `\w+|[^\w\s]+` (the Rust regex crate).
    case whitespace

    static let gpt2Source = #"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"#
    static let qwen2Source =
        #"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"#

    init?(regex: String) {
        switch regex {
        case Self.gpt2Source: self = .gpt2
        case Self.qwen2Source: self = .qwen2
        default: return nil
        }
    }

    func matches(_ s: [UInt32], units: TextUnits) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        while i < s.count {
            if let end = match(s, at: i, units: units) {
                out.append(i..<end)
                i = end
            } else {
                i = units.next(i)
            }
        }
        return out
    }

    private func match(_ s: [UInt32], at i: Int, units u: TextUnits) -> Int? {
        switch self {
        case .gpt2: return Self.gpt2(s, i, u)
        case .qwen2: return Self.qwen2(s, i, u)
        case .whitespace: return Self.whitespace(s, i, u)
        }
    }

    // `C` is the class of the unit starting at an index: a scalar's, or under the grapheme
    // flaw (tests only) a whole cluster taken as its first scalar.
    private static func run(_ s: [UInt32], from i: Int, _ u: TextUnits, _ test: (UInt32) -> Bool) -> Int {
        var j = i
        while j < s.count, test(s[j]) { j = u.next(j) }
        return j
    }

    private static let contractions: [[UInt32]] = ["s", "t", "re", "ve", "m", "ll", "d"].map {
        $0.unicodeScalars.map(\.value)
    }

    /// `'s|'t|'re|'ve|'m|'ll|'d`, case-sensitive or under `(?i:...)`, where Oniguruma's
    /// Unicode case folding also takes U+017F (long s) for `s`.
    private static func contraction(_ s: [UInt32], _ i: Int, foldCase: Bool) -> Int? {
        guard s[i] == 0x27 else { return nil }
        for word in contractions {
            guard i + word.count < s.count else { continue }
            var ok = true
            for (k, c) in word.enumerated() {
                let x = s[i + 1 + k]
                let same = foldCase ? (x == c || x == c - 0x20 || (c == 0x73 && x == 0x17F)) : x == c
                if !same { ok = false; break }
            }
            if ok { return i + 1 + word.count }
        }
        return nil
    }

    /// `\s+(?!\S)` then `\s+`: the whitespace run, less its last scalar when a non-space follows
    /// (and that leaves something), else the whole run.
    private static func spaces(_ s: [UInt32], _ i: Int, _ u: TextUnits) -> Int? {
        guard CharacterClass.isSpace(s[i]) else { return nil }
        let j = run(s, from: i, u, CharacterClass.isSpace)
        if j == s.count { return j }
        let back = u.previous(j)
        return back > i ? back : j
    }

    private static func gpt2(_ s: [UInt32], _ i: Int, _ u: TextUnits) -> Int? {
        if let end = contraction(s, i, foldCase: false) { return end }
        let hasSpace = s[i] == 0x20 && u.next(i) < s.count
        let start = hasSpace ? u.next(i) : i
        for test in [CharacterClass.isLetter, CharacterClass.isNumber, Self.isOther] {
            if hasSpace, test(s[start]) { return run(s, from: start, u, test) }
            if test(s[i]) { return run(s, from: i, u, test) }
        }
        return spaces(s, i, u)
    }

    private static func isOther(_ c: UInt32) -> Bool {
        !CharacterClass.isSpace(c) && !CharacterClass.isLetter(c) && !CharacterClass.isNumber(c)
    }

    private static func qwen2(_ s: [UInt32], _ i: Int, _ u: TextUnits) -> Int? {
        if let end = contraction(s, i, foldCase: true) { return end }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        let c = s[i], n = u.next(i)
        if !CharacterClass.isLineBreak(c), !CharacterClass.isLetter(c), !CharacterClass.isNumber(c),
            n < s.count, CharacterClass.isLetter(s[n])
        {
            return run(s, from: n, u, CharacterClass.isLetter)
        }
        if CharacterClass.isLetter(c) { return run(s, from: i, u, CharacterClass.isLetter) }
        // \p{N}
        if CharacterClass.isNumber(c) { return n }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        let start = (c == 0x20 && n < s.count && isOther(s[n])) ? n : i
        if isOther(s[start]) {
            let end = run(s, from: start, u, isOther)
            return run(s, from: end, u, CharacterClass.isLineBreak)
        }
        // \s*[\r\n]+: the whitespace run up to and including its last line break
        if CharacterClass.isSpace(c) {
            let j = run(s, from: i, u, CharacterClass.isSpace)
            var k = j
            while k > i {
                k = u.previous(k)
                if CharacterClass.isLineBreak(s[k]) { return u.next(k) }
            }
        }
        return spaces(s, i, u)
    }

    private static func whitespace(_ s: [UInt32], _ i: Int, _ u: TextUnits) -> Int? {
        if CharacterClass.isWord(s[i]) { return run(s, from: i, u, CharacterClass.isWord) }
        if !CharacterClass.isSpace(s[i]) {
            return run(s, from: i, u) { !CharacterClass.isWord($0) && !CharacterClass.isSpace($0) }
        }
        return nil
    }
}
