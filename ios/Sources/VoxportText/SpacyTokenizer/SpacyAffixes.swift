import Foundation

/// `Tokenizer._tokenize_affixes`, `_split_affixes` and `_attach_tokens`. Lengths are UTF-16
/// units where spaCy counts code points: every comparison is between lengths of pieces of one
/// string, so the decisions are the same. spaCy's span cache is left out: it only replays what
/// the same span gave before (nothing is cached once a special case is involved).
extension SpacyTokenizer {
    struct Tok {
        var text: String
        var spacy: Bool
        var norm: String?
    }

    static func tokenizeAffixes(
        _ string: String, prefix: SpacyPattern?, suffix: SpacyPattern?, infix: SpacyPattern?,
        tokenMatch: SpacyPattern?, urlMatch: SpacyPattern?, specials: [Key: [Piece]]?
    ) -> [Tok] {
        let scalars = Array(string.unicodeScalars)
        guard let first = scalars.first else { return [] }
        var doc: [Tok] = []
        func span(_ range: Range<Int>) {
            var s = ""
            s.unicodeScalars.append(contentsOf: scalars[range])
            if let pieces = specials?[Array(s.utf16)] {
                doc += pieces.map { Tok(text: $0.text, spacy: false, norm: $0.norm) }
                return
            }
            var affixes = Affixes(prefix: prefix, suffix: suffix, specials: specials, tokenMatch: tokenMatch)
            let core = affixes.split(s as NSString)
            doc += affixes.prefixes.map { Tok(text: $0, spacy: false) }
            if core.length > 0 {
                doc += attach(core, infix: infix, tokenMatch: tokenMatch, urlMatch: urlMatch, specials: specials)
            }
            doc += affixes.suffixes.reversed().map { Tok(text: $0, spacy: false) }
        }
        // Spans of whitespace and of non-whitespace alternate; one ' ' after a span is its
        // trailing space, and any other whitespace run becomes a span (a token) of its own.
        var start = 0
        var inSpace = PythonText.isSpace(first.value)
        for (i, uc) in scalars.enumerated() where PythonText.isSpace(uc.value) != inSpace {
            if start < i { span(start..<i) }
            if uc == " ", !doc.isEmpty {
                doc[doc.count - 1].spacy = true
                start = i + 1
            } else {
                start = i
            }
            inSpace.toggle()
        }
        if start < scalars.count {
            span(start..<scalars.count)
            doc[doc.count - 1].spacy = scalars.last == " " && !inSpace
        }
        return doc
    }

    /// `_split_affixes`: strip prefixes and suffixes until neither pattern finds one, or the
    /// rest is a special case or matches `token_match`.
    struct Affixes {
        let prefix: SpacyPattern?
        let suffix: SpacyPattern?
        let specials: [Key: [Piece]]?
        let tokenMatch: SpacyPattern?
        var prefixes: [String] = []
        var suffixes: [String] = []

        func isSpecial(_ s: NSString) -> Bool { specials?[Array((s as String).utf16)] != nil }

        mutating func split(_ span: NSString) -> NSString {
            var string = span
            var lastSize = 0
            while string.length > 0, string.length != lastSize {
                if let tokenMatch, tokenMatch.matches(string) { break }
                if isSpecial(string) { break }
                lastSize = string.length
                let preLen = prefix?.searchLength(string) ?? 0
                if preLen != 0 {
                    let minusPre = string.substring(from: preLen) as NSString
                    if minusPre.length > 0, isSpecial(minusPre) {
                        prefixes.append(string.substring(to: preLen))
                        string = minusPre
                        break
                    }
                }
                let sufLen = suffix?.searchLength(string.substring(from: preLen) as NSString) ?? 0
                if sufLen != 0 {
                    let minusSuf = string.substring(to: string.length - sufLen) as NSString
                    if minusSuf.length > 0, isSpecial(minusSuf) {
                        suffixes.append(string.substring(from: string.length - sufLen))
                        string = minusSuf
                        break
                    }
                }
                let n = string.length
                if preLen != 0, sufLen != 0, preLen + sufLen <= n {
                    prefixes.append(string.substring(to: preLen))
                    suffixes.append(string.substring(from: n - sufLen))
                    string = string.substring(with: NSRange(location: preLen, length: n - preLen - sufLen)) as NSString
                } else if preLen != 0 {
                    prefixes.append(string.substring(to: preLen))
                    string = string.substring(from: preLen) as NSString
                } else if sufLen != 0 {
                    suffixes.append(string.substring(from: n - sufLen))
                    string = string.substring(to: n - sufLen) as NSString
                }
            }
            return string
        }
    }

    /// `_attach_tokens` for what the affixes left: a special case, a token or URL match, or
    /// the pieces between infix matches (an infix at the very start is not split off).
    static func attach(_ string: NSString, infix: SpacyPattern?, tokenMatch: SpacyPattern?, urlMatch: SpacyPattern?, specials: [Key: [Piece]]?) -> [Tok] {
        let s = string as String
        if let pieces = specials?[Array(s.utf16)] {
            return pieces.map { Tok(text: $0.text, spacy: false, norm: $0.norm) }
        }
        if tokenMatch?.matches(string) == true || urlMatch?.matches(string) == true {
            return [Tok(text: s, spacy: false)]
        }
        let matches = infix?.all(string) ?? []
        if matches.isEmpty { return [Tok(text: s, spacy: false)] }
        var out: [Tok] = []
        var start = 0
        for m in matches {
            if m.location == 0 { continue }
            if m.location != start {
                out.append(Tok(text: string.substring(with: NSRange(location: start, length: m.location - start)), spacy: false))
            }
            if m.length != 0 { out.append(Tok(text: string.substring(with: m), spacy: false)) }
            start = m.location + m.length
        }
        if start < string.length { out.append(Tok(text: string.substring(from: start), spacy: false)) }
        return out
    }
}
