import Foundation

/// misaki 0.9.4's `Lexicon.get_number` (and `is_currency`): a word `is_number` accepted, read
/// through num2words (here `EnglishNumberWords`) and the lexicon. By then the word is ASCII: digits, ",",
/// ".", a head's "-", and one suffix of ASCII letters or "'".
extension MisakiLexicon {
    static let currencyUnits: [String: (String, String)] = ["$": ("dollar", "cent"), "£": ("pound", "pence"), "€": ("euro", "cent")]
    static let ordinals: Set<String> = ["st", "nd", "rd", "th"]

    /// `Lexicon.is_currency`: no ".", or one "." with fewer than 3 digits after it (misaki's
    /// `set(cents) == {0}` compares characters with the integer 0: never true).
    static func isCurrency(_ word: String) -> Bool {
        let parts = word.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 1 { return true }
        if parts.count > 2 { return false }
        return parts[1].count < 3
    }

    /// What `get_number` returns: `.some((ps, rating))`, `(nil, nil)` when it read nothing;
    /// `nil` where misaki raises (num2words' OverflowError at 10^306 and beyond, a float beyond
    /// what Python converts).
    func getNumber(_ word0: String, _ currency: String?, _ isHead: Bool, _ numFlags: String) -> Result? {
        var word = Substring(word0)
        // `re.search(r"[a-z']+$", word)`.
        let suffixStart = word.lastIndex { !(("a"..."z").contains($0) || $0 == "'") }.map { word.index(after: $0) } ?? word.startIndex
        let suffix: String? = suffixStart < word.endIndex ? String(word[suffixStart...]) : nil
        word = word[..<suffixStart]
        var result: [Result] = []
        if word.hasPrefix("-") {
            result.append(lookup(T.scalars("minus"), nil, nil, nil))
            word = word.dropFirst()
        }
        var raises = false
        func extendNum(_ num: String, first: Bool = true) {
            let splits = Self.splitOnNonLetters(num)
            for (i, w) in splits.enumerated() {
                if w != "and" || numFlags.contains("&") {
                    if first && i == 0 && splits.count > 1 && w == "one" && numFlags.contains("a") {
                        result.append((T.scalars("ə"), 4))
                    } else {
                        result.append(lookup(T.scalars(w), nil, w == "point" ? -2 : nil, nil))
                    }
                } else if w == "and" && numFlags.contains("n") && !result.isEmpty {
                    let last = result[result.count - 1]
                    // Python's `None + 'ən'` raises.
                    guard let ps = last.ps else {
                        raises = true
                        return
                    }
                    result[result.count - 1] = (ps + T.scalars("ən"), last.rating)
                }
            }
        }
        /// `extend_num(num)` without escape: `num2words(int(num))`.
        func extendDigits(_ num: some StringProtocol, first: Bool = true) {
            guard let n = EnglishNumberWords.Natural(decimal: num), let words = EnglishNumberWords.cardinal(n) else {
                raises = true
                return
            }
            extendNum(words, first: first)
        }
        func extendInt(_ n: EnglishNumberWords.Natural, first: Bool = true) {
            guard let words = EnglishNumberWords.cardinal(n) else {
                raises = true
                return
            }
            extendNum(words, first: first)
        }
        let isDigit = !word.isEmpty && word.allSatisfy { $0.isASCII && $0.isNumber }
        let currencyKnown = currency.map { Self.currencyUnits[$0] != nil } ?? false
        if isDigit, let suffix, Self.ordinals.contains(suffix) {
            guard let words = EnglishNumberWords.ordinal(EnglishNumberWords.Natural(decimal: word)!) else { return nil }
            extendNum(words)
        } else if result.isEmpty && word.count == 4 && !currencyKnown && isDigit {
            extendNum(EnglishNumberWords.year(Int(word)!))
        } else if !isHead && !word.contains(".") {
            let num = Array(word.replacingOccurrences(of: ",", with: ""))
            if num[0] == "0" || num.count > 3 {
                for n in num { extendDigits(String(n), first: false) }
            } else if num.count == 3 && !(num[1] == "0" && num[2] == "0") {
                extendDigits(String(num[0]))
                if num[1] == "0" {
                    result.append(lookup(T.scalars("O"), nil, -2, nil))
                    extendDigits(String(num[2]), first: false)
                } else {
                    extendDigits(String(num[1...]), first: false)
                }
            } else {
                extendDigits(String(num))
            }
        } else if word.filter({ $0 == "." }).count > 1 || !isHead {
            var first = true
            for num in word.replacingOccurrences(of: ",", with: "").split(separator: ".", omittingEmptySubsequences: false) {
                if num.isEmpty {
                } else if num.first == "0" || (num.count != 2 && num.dropFirst().contains { $0 != "0" }) {
                    for n in num { extendDigits(String(n), first: false) }
                } else {
                    extendDigits(num, first: first)
                }
                first = false
            }
        } else if let currency, let units = Self.currencyUnits[currency], Self.isCurrency(String(word)) {
            let nums = word.replacingOccurrences(of: ",", with: "").split(separator: ".", omittingEmptySubsequences: false)
            var pairs: [(EnglishNumberWords.Natural, String)] = []
            for (num, unit) in zip(nums, [units.0, units.1]) {
                guard num.isEmpty || EnglishNumberWords.Natural(decimal: num) != nil else { return nil }
                pairs.append((num.isEmpty ? EnglishNumberWords.Natural(0) : EnglishNumberWords.Natural(decimal: num)!, unit))
            }
            if pairs.count > 1 {
                if pairs[1].0.isZero {
                    pairs = Array(pairs.prefix(1))
                } else if pairs[0].0.isZero {
                    pairs = Array(pairs.dropFirst())
                }
            }
            for (i, (num, unit)) in pairs.enumerated() {
                if i > 0 { result.append(lookup(T.scalars("and"), nil, nil, nil)) }
                extendInt(num, first: i == 0)
                result.append(
                    num != EnglishNumberWords.Natural(1) && unit != "pence"
                        ? stemS(T.scalars(unit + "s"), nil, nil, nil) : lookup(T.scalars(unit), nil, nil, nil))
            }
        } else {
            let words: String?
            if isDigit {
                words = EnglishNumberWords.cardinal(EnglishNumberWords.Natural(decimal: word)!)
            } else if !word.contains(".") {
                let plain = word.replacingOccurrences(of: ",", with: "")
                guard let n = EnglishNumberWords.Natural(decimal: plain) else { return nil }
                words = suffix.map(Self.ordinals.contains) == true ? EnglishNumberWords.ordinal(n) : EnglishNumberWords.cardinal(n)
            } else {
                let plain = word.replacingOccurrences(of: ",", with: "")
                if plain.hasPrefix(".") {
                    words = "point " + plain.dropFirst().map { EnglishNumberWords.cardinal(Int(String($0))!) }.joined(separator: " ")
                } else {
                    words = EnglishNumberWords.cardinalOfFloat(plain)
                }
            }
            guard let words else { return nil }
            extendNum(words)
        }
        if raises { return nil }
        if result.isEmpty { return (nil, nil) }
        // `' '.join(p for p, _ in result)` raises on a None.
        var ps: Scalars = []
        for (i, r) in result.enumerated() {
            guard let p = r.ps else { return nil }
            if i > 0 { ps.append(0x20) }
            ps += p
        }
        guard let rating = result.compactMap(\.rating).min(), result.allSatisfy({ $0.rating != nil }) else { return nil }
        switch suffix {
        case "s", "'s": return (suffixS(ps), rating)
        case "ed", "'d": return (suffixEd(ps), rating)
        case "ing": return (suffixIng(ps), rating)
        default: return (ps, rating)
        }
    }

    /// `re.split(r'[^a-z]+', s)`: a run of other characters is one separator (an empty piece
    /// only at either end).
    static func splitOnNonLetters(_ s: String) -> [String] {
        var pieces: [String] = [], current = "", inSeparator = false
        for c in s {
            if c >= "a" && c <= "z" && c.isASCII {
                if inSeparator {
                    pieces.append(current)
                    current = ""
                    inSeparator = false
                }
                current.append(c)
            } else {
                inSeparator = true
            }
        }
        if inSeparator {
            pieces.append(current)
            current = ""
        }
        pieces.append(current)
        return pieces
    }

    /// `apply_stress(ps, stress)` on what `get_number` returned; nil where Python raises on a
    /// None (every stress but a few odd values reads the phonemes).
    static func stressNumber(_ r: Result, _ stress: Double?) -> Result? {
        guard let ps = r.ps else {
            guard let stress else { return r }
            let readsPhonemes = stress < -1 || stress == -1 || stress == 0 || stress == -0.5 || stress == 0.5 || stress >= 1
            return readsPhonemes ? nil : r
        }
        return (MisakiStress.apply(ps, stress), r.rating)
    }
}
