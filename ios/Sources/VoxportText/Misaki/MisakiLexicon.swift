import Foundation

/// misaki 0.9.4's English `Lexicon` (American, `british=False`): a word, its part-of-speech
/// tag, its stress and the next-sound context to phonemes and a rating, as
/// `misaki.en.Lexicon.__call__` computes them, numbers too (`get_number`, num2words:
/// MisakiNumbers.swift); `.number` where misaki's number reader raises.
///
/// Words are Unicode scalar arrays with Python's `str` rules (`PythonText`). Reads the
/// folder `conversion.kokoro.lexicon.write_lexicon` writes (`us_gold.tsv`, `us_silver.tsv`, as
/// misaki packages them) and grows both dictionaries as misaki does (`MisakiDictionary`).
public struct MisakiLexicon: Sendable {
    typealias Scalars = [UInt32]
    typealias Result = (ps: Scalars?, rating: Int?)
    typealias T = PythonText

    let golds: MisakiDictionary
    let silvers: MisakiDictionary

    public init(folder: URL) throws {
        let gold = folder.appendingPathComponent("us_gold.tsv"), silver = folder.appendingPathComponent("us_silver.tsv")
        for f in [gold, silver] where !FileManager.default.fileExists(atPath: f.path) {
            throw MisakiLexiconError("no \(f.path): write the lexicon folder with conversion.kokoro.lexicon.write_lexicon")
        }
        golds = try MisakiDictionary(contentsOf: gold)
        silvers = try MisakiDictionary(contentsOf: silver)
    }

    // Python-side constants (misaki/en.py).
    static let capStresses: (Double, Double) = (0.5, 2)
    static let addSymbols: [String: String] = [".": "dot", "/": "slash"]
    static let symbols: [String: String] = ["%": "percent", "&": "and", "+": "plus", "@": "at"]
    static let currencies: [String: String] = ["$": "dollar", "£": "pound", "€": "euro"]
    static let usTaus = Set(T.scalars("AIOWYiuæɑəɛɪɹʊʌ"))

    static func lexiconOrd(_ c: UInt32) -> Bool {
        c == 39 || c == 45 || (65...90).contains(c) || (97...122).contains(c)
    }

    /// `Lexicon.__call__(tk, ctx)`.
    public func callAsFunction(_ tk: MisakiLexiconToken, _ ctx: MisakiTokenContext) -> MisakiLexiconAnswer {
        var word = T.scalars(tk.alias ?? tk.text)
        word = T.replace(T.replace(word, 0x2018, with: [39]), 0x2019, with: [39])
        word = T.nfkc(word)
        word = word.flatMap { c -> Scalars in
            guard c >= 0x80, let d = T.digitValue(c) else { return [c] }
            return T.scalars(String(d))
        }
        let stress: Double? = word == T.lower(word) ? nil : (word == T.upper(word) ? Self.capStresses.1 : Self.capStresses.0)
        let (ps, rating) = getWord(word, tk.tag, stress, ctx)
        if let ps {
            return .word(phonemes: T.string(MisakiStress.apply(appendCurrency(ps, tk.currency), tk.stress)), rating: rating)
        }
        if Self.isNumber(word, tk.isHead) {
            guard let number = getNumber(T.string(word), tk.currency, tk.isHead, tk.numFlags),
                let stressed = Self.stressNumber(number, tk.stress)
            else { return .number }
            return .word(phonemes: stressed.ps.map(T.string), rating: stressed.rating)
        }
        return .word(phonemes: nil, rating: nil)
    }

    /// `Lexicon.is_number`: some ASCII digit, and after one suffix only digits, ",", "." and
    /// (at a head's start) "-".
    static func isNumber(_ word: Scalars, _ isHead: Bool) -> Bool {
        func digit(_ c: UInt32) -> Bool { c >= 0x30 && c <= 0x39 }
        guard word.contains(where: digit) else { return false }
        var w = word
        for s in ["ing", "'d", "ed", "'s", "st", "nd", "rd", "th", "s"] where T.hasSuffix(w, s) {
            w.removeLast(s.unicodeScalars.count)
            break
        }
        return w.enumerated().allSatisfy { i, c in digit(c) || c == 0x2C || c == 0x2E || (isHead && i == 0 && c == 0x2D) }
    }

    func appendCurrency(_ ps: Scalars, _ currency: String?) -> Scalars {
        guard let currency, !currency.isEmpty else { return ps }
        guard let unit = Self.currencies[currency], let plural = stemS(T.scalars(unit + "s"), nil, nil, nil).ps, !plural.isEmpty
        else { return ps }
        return ps + [0x20] + plural
    }

    // MARK: get_word and the special cases

    func getWord(_ word0: Scalars, _ tag: String, _ stress: Double?, _ ctx: MisakiTokenContext) -> Result {
        var word = word0
        let special = specialCase(word, tag, stress, ctx)
        if special.ps != nil { return special }
        let wl = T.lower(word)
        if word.count > 1, T.isAlpha(T.replace(word, 39, with: [])), word != wl, tag != "NNP" || word.count > 7,
            !golds.contains(word), !silvers.contains(word),
            word == T.upper(word) || Array(word.dropFirst()) == T.lower(Array(word.dropFirst())),
            golds.contains(wl) || silvers.contains(wl)
                || stemS(wl, tag, stress, ctx).ps?.isEmpty == false
                || stemEd(wl, tag, stress, ctx).ps?.isEmpty == false
                || stemIng(wl, tag, stress, ctx).ps?.isEmpty == false
        {
            word = wl
        }
        if isKnown(word, tag) { return lookup(word, tag, stress, ctx) }
        if T.hasSuffix(word, "s'"), isKnown(word.dropLast(2) + [39, 0x73], tag) {
            return lookup(word.dropLast(2) + [39, 0x73], tag, stress, ctx)
        }
        if T.hasSuffix(word, "'"), isKnown(Array(word.dropLast()), tag) {
            return lookup(Array(word.dropLast()), tag, stress, ctx)
        }
        let s = stemS(word, tag, stress, ctx)
        if s.ps != nil { return s }
        let ed = stemEd(word, tag, stress, ctx)
        if ed.ps != nil { return ed }
        let ing = stemIng(word, tag, stress ?? 0.5, ctx)
        if ing.ps != nil { return ing }
        return (nil, nil)
    }

    func gold(_ word: String) -> MisakiDictionary.Entry { golds[T.scalars(word)]! }

    func goldPlain(_ word: String) -> Scalars {
        guard case .plain(let ps) = gold(word) else { fatalError("misaki's gold \(word) is a plain entry") }
        return ps
    }

    func specialCase(_ word: Scalars, _ tag: String, _ stress: Double?, _ ctx: MisakiTokenContext) -> Result {
        let w = T.string(word)
        func isAny(_ options: String...) -> Bool { options.contains { T.equals(word, $0) } }
        if tag == "ADD", word.count == 1, let name = Self.addSymbols[w], T.equals(word, w) {
            return lookup(T.scalars(name), nil, -0.5, ctx)
        } else if word.count == 1, let name = Self.symbols[w], T.equals(word, w) {
            return lookup(T.scalars(name), nil, nil, ctx)
        } else if Self.isDottedAbbreviation(word) {
            return getNNP(word)
        } else if isAny("a", "A") {
            return (T.scalars(tag == "DT" ? "ɐ" : "ˈA"), 4)
        } else if isAny("am", "Am", "AM") {
            if tag.hasPrefix("NN") { return getNNP(word) }
            if ctx.futureVowel == nil || !T.equals(word, "am") || (stress.map { $0 != 0 && $0 > 0 } ?? false) {
                return (goldPlain("am"), 4)
            }
            return (T.scalars("ɐm"), 4)
        } else if isAny("an", "An", "AN") {
            if T.equals(word, "AN") && tag.hasPrefix("NN") { return getNNP(word) }
            return (T.scalars("ɐn"), 4)
        } else if T.equals(word, "I") && tag == "PRP" {
            return ([MisakiStress.secondary, 0x49], 4)
        } else if isAny("by", "By", "BY") && Self.parentTag(tag) == "ADV" {
            return (T.scalars("bˈI"), 4)
        } else if isAny("to", "To") || (T.equals(word, "TO") && (tag == "TO" || tag == "IN")) {
            switch ctx.futureVowel {
            case nil: return (goldPlain("to"), 4)
            case false?: return (T.scalars("tə"), 4)
            case true?: return (T.scalars("tʊ"), 4)
            }
        } else if isAny("in", "In") || (T.equals(word, "IN") && tag != "NNP") {
            let mark: Scalars = ctx.futureVowel == nil || tag != "IN" ? [MisakiStress.primary] : []
            return (mark + T.scalars("ɪn"), 4)
        } else if isAny("the", "The") || (T.equals(word, "THE") && tag == "DT") {
            return (T.scalars(ctx.futureVowel == true ? "ði" : "ðə"), 4)
        } else if tag == "IN" && Self.isVersus(word) {
            return lookup(T.scalars("versus"), nil, nil, ctx)
        } else if isAny("used", "Used", "USED") {
            guard case .tagged(let used) = gold("used") else { fatalError("misaki's gold 'used' is tagged") }
            return ((tag == "VBD" || tag == "JJ") && ctx.futureTo ? used["VBD"]! : used["DEFAULT"]!, 4)
        }
        return (nil, nil)
    }

    /// `'.' in word.strip('.') and word.replace('.', '').isalpha() and
    /// len(max(word.split('.'), key=len)) < 3`.
    static func isDottedAbbreviation(_ word: Scalars) -> Bool {
        let dot: UInt32 = 0x2E
        guard let first = word.firstIndex(where: { $0 != dot }), let last = word.lastIndex(where: { $0 != dot }),
            word[first...last].contains(dot)
        else { return false }
        guard T.isAlpha(word.filter { $0 != dot }) else { return false }
        return word.split(separator: dot, omittingEmptySubsequences: false).allSatisfy { $0.count < 3 }
    }

    /// `re.match(r'(?i)vs\.?$', word)`: "vs" in any case (Python's case-insensitive "s" also
    /// matches U+017F), an optional ".", then the end or a final newline.
    static func isVersus(_ word: Scalars) -> Bool {
        guard word.count >= 2, word[0] == 0x76 || word[0] == 0x56, [0x73, 0x53, 0x17F].contains(word[1]) else { return false }
        var rest = word.dropFirst(2)
        if rest.first == 0x2E { rest = rest.dropFirst() }
        return rest.isEmpty || (rest.count == 1 && rest.first == 0x0A)
    }

    static func parentTag(_ tag: String?) -> String? {
        guard let tag else { return nil }
        if tag.hasPrefix("VB") { return "VERB" }
        if tag.hasPrefix("NN") { return "NOUN" }
        if tag.hasPrefix("ADV") || tag.hasPrefix("RB") { return "ADV" }
        if tag.hasPrefix("ADJ") || tag.hasPrefix("JJ") { return "ADJ" }
        return tag
    }

    /// `get_NNP`: the word spelled letter by letter, its last secondary stress made primary.
    func getNNP(_ word: Scalars) -> Result {
        var ps: Scalars = []
        for c in word where T.isAlpha(c) {
            guard case .plain(let letter)? = golds[T.upper([c])] else { return (nil, nil) }
            ps += letter
        }
        ps = MisakiStress.apply(ps, 0)
        if let k = ps.lastIndex(of: MisakiStress.secondary) { ps[k] = MisakiStress.primary }
        return (ps, 3)
    }

    // MARK: is_known and lookup

    func isKnown(_ word: Scalars, _ tag: String?) -> Bool {
        if golds.contains(word) || silvers.contains(word) || (word.count == 1 && Self.symbols[T.string(word)] != nil && T.isASCII(word)) {
            return true
        }
        if !T.isAlpha(word) || !word.allSatisfy(Self.lexiconOrd) { return false }
        if word.count == 1 { return true }
        if word == T.upper(word) && golds.contains(T.lower(word)) { return true }
        let tail = Array(word.dropFirst())
        return tail == T.upper(tail)
    }

    func lookup(_ word0: Scalars, _ tag0: String?, _ stress: Double?, _ ctx: MisakiTokenContext?) -> Result {
        var word = word0, tag = tag0
        var isNNP = false
        if word == T.upper(word) && !golds.contains(word) {
            word = T.lower(word)
            isNNP = tag == "NNP"
        }
        var entry = golds[word], rating = 4
        if entry == nil && !isNNP {
            entry = silvers[word]
            rating = 3
        }
        var ps: Scalars?
        switch entry {
        case nil: ps = nil
        case .plain(let p)?: ps = p
        case .tagged(let tags)?:
            if let ctx, ctx.futureVowel == nil, tags["None"] != nil {
                tag = "None"
            } else if tag.map({ tags[$0] == nil }) ?? true {
                tag = Self.parentTag(tag)
            }
            // `ps.get(tag, ps['DEFAULT'])`: a tag present with None stays None.
            if let tag, let reading = tags[tag] { ps = reading } else { ps = tags["DEFAULT"]! }
        }
        if ps == nil || (isNNP && !ps!.contains(MisakiStress.primary)) {
            let nnp = getNNP(word)
            if nnp.ps != nil { return nnp }
            // misaki goes on with (None, None) here; apply_stress(None, stress) raises unless
            // stress is None, which no ASCII word reaches (every letter has a gold reading).
            return (nil, nil)
        }
        return (MisakiStress.apply(ps!, stress), rating)
    }

    // MARK: -s, -ed, -ing

    func suffixS(_ stem: Scalars?) -> Scalars? {
        guard let stem, let last = stem.last else { return nil }
        if T.scalars("ptkfθ").contains(last) { return stem + [0x73] }
        if T.scalars("szʃʒʧʤ").contains(last) { return stem + T.scalars("ᵻz") }
        return stem + [0x7A]
    }

    func stemS(_ word: Scalars, _ tag: String?, _ stress: Double?, _ ctx: MisakiTokenContext?) -> Result {
        guard word.count >= 3, word.last == 0x73 else { return (nil, nil) }
        let stem: Scalars
        if !T.hasSuffix(word, "ss"), isKnown(Array(word.dropLast()), tag) {
            stem = Array(word.dropLast())
        } else if T.hasSuffix(word, "'s") || (word.count > 4 && T.hasSuffix(word, "es") && !T.hasSuffix(word, "ies")),
            isKnown(Array(word.dropLast(2)), tag)
        {
            stem = Array(word.dropLast(2))
        } else if word.count > 4 && T.hasSuffix(word, "ies"), isKnown(word.dropLast(3) + [0x79], tag) {
            stem = word.dropLast(3) + [0x79]
        } else {
            return (nil, nil)
        }
        let r = lookup(stem, tag, stress, ctx)
        return (suffixS(r.ps), r.rating)
    }

    func suffixEd(_ stem: Scalars?) -> Scalars? {
        guard let stem, let last = stem.last else { return nil }
        if T.scalars("pkfθʃsʧ").contains(last) { return stem + [0x74] }
        if last == 0x64 { return stem + T.scalars("ᵻd") }
        if last != 0x74 { return stem + [0x64] }
        if stem.count < 2 { return stem + T.scalars("ɪd") }
        if Self.usTaus.contains(stem[stem.count - 2]) { return stem.dropLast() + T.scalars("ɾᵻd") }
        return stem + T.scalars("ᵻd")
    }

    func stemEd(_ word: Scalars, _ tag: String?, _ stress: Double?, _ ctx: MisakiTokenContext?) -> Result {
        guard word.count >= 4, word.last == 0x64 else { return (nil, nil) }
        let stem: Scalars
        if !T.hasSuffix(word, "dd"), isKnown(Array(word.dropLast()), tag) {
            stem = Array(word.dropLast())
        } else if word.count > 4 && T.hasSuffix(word, "ed") && !T.hasSuffix(word, "eed"), isKnown(Array(word.dropLast(2)), tag) {
            stem = Array(word.dropLast(2))
        } else {
            return (nil, nil)
        }
        let r = lookup(stem, tag, stress, ctx)
        return (suffixEd(r.ps), r.rating)
    }

    func suffixIng(_ stem: Scalars?) -> Scalars? {
        guard let stem, !stem.isEmpty else { return nil }
        if stem.count > 1 && stem.last == 0x74 && Self.usTaus.contains(stem[stem.count - 2]) {
            return stem.dropLast() + T.scalars("ɾɪŋ")
        }
        return stem + T.scalars("ɪŋ")
    }

    /// `re.search(r'([bcdgklmnprstvxz])\1ing$|cking$', word)` on a word ending in "ing".
    static func doubledBeforeIng(_ word: Scalars) -> Bool {
        if T.hasSuffix(word, "cking") { return true }
        guard word.count >= 5 else { return false }
        let a = word[word.count - 5], b = word[word.count - 4]
        return a == b && T.scalars("bcdgklmnprstvxz").contains(a)
    }

    func stemIng(_ word: Scalars, _ tag: String?, _ stress: Double?, _ ctx: MisakiTokenContext?) -> Result {
        guard word.count >= 5, T.hasSuffix(word, "ing") else { return (nil, nil) }
        let stem: Scalars
        if word.count > 5, isKnown(Array(word.dropLast(3)), tag) {
            stem = Array(word.dropLast(3))
        } else if isKnown(word.dropLast(3) + [0x65], tag) {
            stem = word.dropLast(3) + [0x65]
        } else if word.count > 5 && Self.doubledBeforeIng(word), isKnown(Array(word.dropLast(4)), tag) {
            stem = Array(word.dropLast(4))
        } else {
            return (nil, nil)
        }
        let r = lookup(stem, tag, stress, ctx)
        return (suffixIng(r.ps), r.rating)
    }
}
