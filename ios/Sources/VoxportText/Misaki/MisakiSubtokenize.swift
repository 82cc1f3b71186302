/// misaki's `subtokenize(word)`: `regex.findall` of its SUBTOKEN_REGEX, matched by hand
/// alternative by alternative in the pattern's order, each with the `regex` module's
/// backtracking order (greedy or lazy as written):
///
///     ^['‘’]+ | \p{Lu}(?=\p{Lu}\p{Ll}) | (?:^-)?(?:\d?[,.]?\d)+ | [-_]+ | ['‘’]{2,}
///     | \p{L}*?(?:['‘’]\p{L})*?\p{Ll}(?=\p{Lu}) | \p{L}+(?:['‘’]\p{L})* | [^-_\p{L}'‘’\d] | ['‘’]+$
///
/// A position no alternative matches is skipped (findall drops it). Letter and digit classes are
/// Swift's Unicode properties (the `regex` module carries its own tables; the corpus is in both).
enum MisakiSubtokenize {
    typealias Scalars = [UInt32]

    static func props(_ c: UInt32) -> Unicode.Scalar.Properties? { Unicode.Scalar(c)?.properties }
    static func isLu(_ c: UInt32) -> Bool { props(c)?.generalCategory == .uppercaseLetter }
    static func isLl(_ c: UInt32) -> Bool { props(c)?.generalCategory == .lowercaseLetter }
    static func isL(_ c: UInt32) -> Bool {
        switch props(c)?.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }
    static func isDigit(_ c: UInt32) -> Bool { props(c)?.generalCategory == .decimalNumber }
    static func isQuote(_ c: UInt32) -> Bool { c == 0x27 || c == 0x2018 || c == 0x2019 }

    static func split(_ s: Scalars) -> [Scalars] {
        var out: [Scalars] = []
        var i = 0
        while i < s.count {
            if let end = match(s, i) {
                out.append(Array(s[i..<end]))
                i = end
            } else {
                i += 1
            }
        }
        return out
    }

    /// The end of the first alternative matching at `i`, or nil.
    static func match(_ s: Scalars, _ i: Int) -> Int? {
        let n = s.count
        func at(_ k: Int, _ p: (UInt32) -> Bool) -> Bool { k < n && p(s[k]) }
        func run(_ k: Int, _ p: (UInt32) -> Bool) -> Int {
            var e = k
            while e < n && p(s[e]) { e += 1 }
            return e
        }
        // ^['‘’]+
        if i == 0, at(0, isQuote) { return run(0, isQuote) }
        // \p{Lu}(?=\p{Lu}\p{Ll})
        if at(i, isLu), at(i + 1, isLu), at(i + 2, isLl) { return i + 1 }
        // (?:^-)?(?:\d?[,.]?\d)+
        if i == 0, s[0] == 0x2D, let e = digits(s, 1) { return e }
        if let e = digits(s, i) { return e }
        // [-_]+
        let dash: (UInt32) -> Bool = { $0 == 0x2D || $0 == 0x5F }
        if at(i, dash) { return run(i, dash) }
        // ['‘’]{2,}
        if run(i, isQuote) >= i + 2 { return run(i, isQuote) }
        // \p{L}*?(?:['‘’]\p{L})*?\p{Ll}(?=\p{Lu}): lazy, the inner group widening first.
        var a = i
        while true {
            var q = a
            while true {
                if at(q, isLl), at(q + 1, isLu) { return q + 1 }
                if at(q, isQuote), at(q + 1, isL) { q += 2 } else { break }
            }
            if at(a, isL) { a += 1 } else { break }
        }
        // \p{L}+(?:['‘’]\p{L})*
        if at(i, isL) {
            var e = run(i, isL)
            while at(e, isQuote), at(e + 1, isL) { e += 2 }
            return e
        }
        // [^-_\p{L}'‘’\d]
        if !dash(s[i]) && !isL(s[i]) && !isQuote(s[i]) && !isDigit(s[i]) { return i + 1 }
        // ['‘’]+$ ($: the end, or before a final "\n")
        if at(i, isQuote) {
            let e = run(i, isQuote)
            if e == n || (e == n - 1 && s[e] == 0x0A) { return e }
        }
        return nil
    }

    /// `(?:\d?[,.]?\d)+` from `k`: each round takes its first working choice (digit then
    /// separator taken, then the separator given back, then the digit), rounds while one works.
    static func digits(_ s: Scalars, _ k: Int) -> Int? {
        let n = s.count
        func dig(_ j: Int) -> Bool { j < n && isDigit(s[j]) }
        func sep(_ j: Int) -> Bool { j < n && (s[j] == 0x2C || s[j] == 0x2E) }
        func round(_ j: Int) -> Int? {
            if dig(j) && sep(j + 1) && dig(j + 2) { return j + 3 }
            if dig(j) && dig(j + 1) { return j + 2 }
            if sep(j) && dig(j + 1) { return j + 2 }
            if dig(j) { return j + 1 }
            return nil
        }
        guard var e = round(k) else { return nil }
        while let next = round(e) { e = next }
        return e
    }
}
