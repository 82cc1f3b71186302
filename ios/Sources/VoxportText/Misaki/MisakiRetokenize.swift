/// misaki's `G2P.retokenize`: each token split by `subtokenize`, punctuation, currency and
/// dash tokens given their phonemes, a "2" between letters read as "to", and the pieces
/// grouped into words (a group: pieces with no whitespace between them).
enum MisakiRetokenize {
    typealias Scalars = [UInt32]
    typealias T = PythonText

    enum Word {
        case single(MToken)
        case group([MToken])
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let currencies: Set<Scalars> = [[0x24], [0xA3], [0x20AC]]  // $ £ €
    /// PUNCT_TAGS (spaCy's glossary).
    static let punctTags: Set<String> = [".", ",", "-LRB-", "-RRB-", "``", "\"\"", "''", ":", "$", "#", "NFP"]
    static let punctTagPhonemes: [String: Scalars] = [
        "-LRB-": [0x28], "-RRB-": [0x29], "``": [0x201C], "\"\"": [0x201D], "''": [0x201D],
    ]
    /// PUNCTS: `;:,.!?—…"“”`.
    static let puncts = Set(T.scalars(";:,.!?—…\"“”"))

    /// `all(97 <= ord(c.lower()) <= 122 for c in text)`; `ord` raises on a lower case of
    /// more than one scalar (Python raises there too).
    static func allASCIILetters(_ text: Scalars) throws -> Bool {
        for c in text {
            let l = T.lower([c])
            guard l.count == 1 else { throw Failure(description: "misaki's retokenize raises on \(T.string([c])) (ord of a 2-character lower case)") }
            if !(97...122).contains(l[0]) { return false }
        }
        return true
    }

    static func words(_ tokens: [MToken]) throws -> [Word] {
        var words: [Word] = []
        var currency: Scalars? = nil
        for (i, token) in tokens.enumerated() {
            var tks: [MToken]
            if token.alias == nil && token.phonemes == nil {
                tks = MisakiSubtokenize.split(token.text).map { t in
                    MToken(
                        text: t, tag: token.tag, whitespace: [], phonemes: token.phonemes, startTs: token.startTs,
                        endTs: token.endTs, isHead: true,
                        stress: token.stress, numFlags: token.numFlags, prespace: false)
                }
            } else {
                tks = [token]
            }
            guard !tks.isEmpty else {
                throw Failure(description: "misaki's retokenize raises on token \(T.string(token.text).debugDescription): no sub-tokens")
            }
            tks[tks.count - 1].whitespace = token.whitespace
            for j in tks.indices {
                var tk = tks[j]
                if tk.alias != nil || tk.phonemes != nil {
                } else if tk.tag == "$" && currencies.contains(tk.text) {
                    currency = tk.text
                    tk.phonemes = []
                    tk.rating = 4
                } else if tk.tag == ":" && (tk.text == [0x2D] || tk.text == [0x2013]) {
                    tk.phonemes = [0x2014]
                    tk.rating = 3
                } else if punctTags.contains(tk.tag), try !allASCIILetters(tk.text) {
                    tk.phonemes = punctTagPhonemes[tk.tag] ?? tk.text.filter(puncts.contains)
                    tk.rating = 4
                } else if currency != nil {
                    if tk.tag != "CD" {
                        currency = nil
                    } else if j + 1 == tks.count && (i + 1 == tokens.count || tokens[i + 1].tag != "CD") {
                        tk.currency = currency
                    }
                } else if 0 < j && j < tks.count - 1 && tk.text == [0x32]
                    && T.isAlpha([tks[j - 1].text.last!, tks[j + 1].text.first!])
                {
                    tk.alias = [0x74, 0x6F]  // "to"
                }
                tks[j] = tk
                if tk.alias != nil || tk.phonemes != nil {
                    words.append(.single(tk))
                } else if case .group(var group) = words.last, group.last!.whitespace.isEmpty {
                    tk.isHead = false
                    group.append(tk)
                    words[words.count - 1] = .group(group)
                } else {
                    words.append(tk.whitespace.isEmpty ? .group([tk]) : .single(tk))
                }
            }
        }
        return words.map { if case .group(let g) = $0, g.count == 1 { .single(g[0]) } else { $0 } }
    }
}
