/// Added tokens (`AddedVocabulary`): split out of the text before anything else, leftmost
/// longest match first (the Rust code's Aho-Corasick `LeftmostLongest`, here a trie over
/// scalars: a UTF-8 match of whole tokens always falls on scalar boundaries, so the two agree).
struct AddedTokens {
    struct Token { let content: [UInt32]; let id: Int32; let special: Bool; let normalized: Bool }

    let tokens: [Token]
    /// Matched on the raw text (`normalized: false`) and on each normalized piece (`true`).
    let rawTrie: ScalarTrie
    let normalizedTrie: ScalarTrie

    /// The ids as `tokenizers` assigns them when it reads a file: the file's ids are not used.
    /// A token the model's vocabulary holds takes that id; any other takes the next one after the
    /// largest added id, or the vocabulary's size while that is larger (`add_tokens`).
    init(_ entries: [ExactJSON], vocabularyCount: Int, modelID: (String) -> Int32?) throws {
        var tokens: [Token] = []
        var byContent: [[UInt32]: Int32] = [:]
        var largest: Int32? = nil
        for entry in entries {
            guard let content = entry["content"]?.string else { throw TokenizerError("tokenizer.json: an added token has no content") }
            for flag in ["single_word", "lstrip", "rstrip"] where entry[flag]?.bool == true {
                throw TokenizerError("tokenizer.json: added token \(content.debugDescription) sets \(flag), which is not supported")
            }
            let scalars = content.unicodeScalars.map(\.value)
            if scalars.isEmpty { continue }
            let id: Int32
            if let known = modelID(content) ?? byContent[scalars] {
                id = known
            } else if let largest, Int(largest) >= vocabularyCount || vocabularyCount == 0 {
                id = largest + 1
            } else {
                id = Int32(vocabularyCount)
            }
            byContent[scalars] = id
            largest = max(largest ?? id, id)
            let special = entry["special"]?.bool ?? false
            tokens.append(Token(content: scalars, id: id, special: special, normalized: entry["normalized"]?.bool ?? !special))
        }
        self.tokens = tokens
        rawTrie = ScalarTrie(tokens.filter { !$0.normalized })
        normalizedTrie = ScalarTrie(tokens.filter { $0.normalized })
    }

    func id(_ content: String) -> Int32? {
        let scalars = content.unicodeScalars.map(\.value)
        return tokens.last { $0.content == scalars }?.id
    }
}

/// A trie over scalars answering "the longest token starting here".
struct ScalarTrie {
    private var children: [[UInt32: Int32]] = [[:]]
    private var ids: [Int32?] = [nil]

    init(_ tokens: [AddedTokens.Token]) {
        for token in tokens {
            var node = 0
            for s in token.content {
                if let child = children[node][s] {
                    node = Int(child)
                } else {
                    children.append([:])
                    ids.append(nil)
                    children[node][s] = Int32(children.count - 1)
                    node = children.count - 1
                }
            }
            ids[node] = token.id
        }
    }

    var isEmpty: Bool { children[0].isEmpty }

    /// The text cut into runs of plain text and matched tokens, leftmost longest first.
    /// `flaw` (tests only): under `.graphemeClusters` a token matches only between grapheme
    /// clusters, as a `String` search does ("<|im_end|>" + U+0301 is then no token).
    func split(_ s: ArraySlice<UInt32>, flaw: EngineFlaw = .none) -> [TextPiece] {
        if isEmpty { return [.text(Array(s))] }
        var boundaries: Set<Int>? = nil
        if flaw == .graphemeClusters {
            let units = TextUnits.graphemes(of: Array(s))
            var cuts: Set<Int> = [s.startIndex]
            var k = 0
            while k < s.count { k = units.next(k); cuts.insert(s.startIndex + k) }
            boundaries = cuts
        }
        var out: [TextPiece] = []
        var plainStart = s.startIndex, i = s.startIndex
        while i < s.endIndex {
            var node = 0, j = i
            var match: (end: Int, id: Int32)? = nil
            while j < s.endIndex, let child = children[node][s[j]] {
                node = Int(child)
                j += 1
                if let id = ids[node], boundaries.map({ $0.contains(i) && $0.contains(j) }) ?? true { match = (j, id) }
            }
            if let match {
                if plainStart < i { out.append(.text(Array(s[plainStart..<i]))) }
                out.append(.token(match.id))
                i = match.end
                plainStart = i
            } else {
                i += 1
            }
        }
        if plainStart < s.endIndex { out.append(.text(Array(s[plainStart..<s.endIndex]))) }
        return out
    }
}

enum TextPiece {
    case text([UInt32])
    case token(Int32)
}
