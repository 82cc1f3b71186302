import Foundation

/// `Tokenizer._apply_special_cases`: after affix splitting, a run of tokens that spells a
/// special case as it tokenizes without special cases (e.g. "can't" left whole after an
/// infix split) is replaced by the special case's pieces. Overlaps are settled as
/// `_filter_special_spans` does: longest first, then leftmost, a match dropped when its first
/// or last token is already taken (by any match looked at, kept or not).
extension SpacyTokenizer {
    func applySpecialCases(_ doc: inout [Tok]) {
        guard !matcherPatterns.isEmpty, !doc.isEmpty else { return }
        let keys = doc.map { Array($0.text.utf16) }
        var found: [(start: Int, end: Int)] = []
        for i in keys.indices {
            for pattern in matcherPatterns[keys[i]] ?? [] where i + pattern.count <= keys.count {
                if zip(pattern, keys[i...]).allSatisfy({ $0 == $1 }) { found.append((i, i + pattern.count)) }
            }
        }
        guard !found.isEmpty else { return }
        // len_start_cmp ascending (shorter first; equal lengths by descending start), walked from the end.
        found.sort { a, b in
            a.end - a.start == b.end - b.start ? b.start < a.start : a.end - a.start < b.end - b.start
        }
        var seen = Set<Int>()
        var kept: [(start: Int, end: Int)] = []
        for span in found.reversed() {
            if !seen.contains(span.start), !seen.contains(span.end - 1) { kept.append(span) }
            for t in span.start..<span.end { seen.insert(t) }
        }
        kept.sort { $0.start < $1.start }
        var out: [Tok] = []
        var i = 0
        var next = 0
        while i < doc.count {
            guard next < kept.count, kept[next].start == i else {
                out.append(doc[i])
                i += 1
                continue
            }
            let span = kept[next]
            next += 1
            var text = ""
            for t in span.start..<span.end {
                text += doc[t].text
                if t < span.end - 1, doc[t].spacy { text += " " }
            }
            if let pieces = specials[Array(text.utf16)] {
                var replaced = pieces.map { Tok(text: $0.text, spacy: false, norm: $0.norm) }
                replaced[replaced.count - 1].spacy = doc[span.end - 1].spacy
                out += replaced
            } else {
                out += doc[span.start..<span.end]
            }
            i = span.end
        }
        doc = out
    }
}
