/// Byte-pair encoding as Hugging Face `tokenizers` runs it (`models/bpe/word.rs`), over integer
/// ids: the merges are a table (left id, right id) -> (rank, merged id), and a word's symbols
/// are merged lowest rank first, leftmost first among equal ranks, through a priority queue
/// whose stale entries are skipped exactly where the Rust code skips them.
struct BPEModel {
    let vocab: Vocabulary
    /// (left << 32 | right) -> (rank << 32 | merged id).
    let merges: [UInt64: UInt64]
    let unknownID: Int32?
    let fuseUnknown: Bool
    let ignoreMerges: Bool
    let continuingPrefix: [UInt8]?
    let endOfWordSuffix: [UInt8]?

    init(_ model: ExactJSON, flaw: EngineFlaw) throws {
        func text(_ key: String) -> String? { model[key]?.string }
        guard let vocabPairs = model["vocab"]?.pairs else { throw TokenizerError("tokenizer.json: BPE model has no vocab") }
        if let dropout = model["dropout"], !dropout.isNull {
            throw TokenizerError("tokenizer.json: BPE dropout is random; only dropout null is exact")
        }
        if model["byte_fallback"]?.bool == true {
            throw TokenizerError("tokenizer.json: BPE byte_fallback is not supported")
        }
        let vocab = try Vocabulary(vocabPairs, flaw: flaw)
        self.vocab = vocab
        if let unk = text("unk_token") {
            guard let id = vocab.id(unk) else {
                throw TokenizerError("tokenizer.json: the unk_token \(unk.debugDescription) is not in the vocabulary")
            }
            unknownID = id
        } else {
            unknownID = nil
        }
        fuseUnknown = model["fuse_unk"]?.bool ?? false
        ignoreMerges = model["ignore_merges"]?.bool ?? false
        continuingPrefix = text("continuing_subword_prefix").map { Array($0.utf8) }.flatMap { $0.isEmpty ? nil : $0 }
        endOfWordSuffix = text("end_of_word_suffix").map { Array($0.utf8) }.flatMap { $0.isEmpty ? nil : $0 }
        merges = try Self.mergeTable(model["merges"]?.array ?? [], vocab: vocab, prefix: continuingPrefix)
    }

    /// `convert_merges_to_hashmap` and the rank table: "a b" strings or ["a", "b"] pairs; the
    /// merged token is `a + b` less the continuing prefix's length of `b`; a later duplicate wins
    /// (a Rust HashMap collected in order).
    private static func mergeTable(_ lines: [ExactJSON], vocab: Vocabulary, prefix: [UInt8]?) throws -> [UInt64: UInt64] {
        var table: [UInt64: UInt64] = [:]
        table.reserveCapacity(lines.count)
        for (rank, line) in lines.enumerated() {
            let parts: [String]
            if let s = line.string {
                parts = s.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            } else if let a = line.array?.compactMap(\.string) {
                parts = a
            } else {
                parts = []
            }
            guard parts.count == 2 else { throw TokenizerError("tokenizer.json: merge \(rank) is not a pair") }
            let left = Array(parts[0].utf8), right = Array(parts[1].utf8)
            // `format!("{}{}", a, &b[prefix_len..])`: the prefix's length is cut unconditionally.
            let merged = left + right.dropFirst(prefix?.count ?? 0)
            guard let a = vocab.id(bytes: left), let b = vocab.id(bytes: right) else {
                throw TokenizerError("tokenizer.json: merge \(rank) names a token outside the vocabulary")
            }
            guard let m = vocab.id(bytes: merged) else {
                throw TokenizerError("tokenizer.json: merge \(rank)'s result is not in the vocabulary")
            }
            table[UInt64(UInt32(a)) << 32 | UInt64(UInt32(b))] = UInt64(rank) << 32 | UInt64(UInt32(m))
        }
        return table
    }

    func tokenize(_ word: [UInt32], into out: inout [Int32]) {
        if word.isEmpty { return }
        if ignoreMerges, let id = vocab.id(bytes: Self.utf8(word[...])) {
            out.append(id)
            return
        }
        var ids = vocab.flaw == .greedyLongestMatch ? greedySymbols(word) : symbols(word)
        if vocab.flaw != .greedyLongestMatch { mergeAll(&ids) }
        out.append(contentsOf: ids)
    }

    static func utf8(_ s: ArraySlice<UInt32>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(s.count)
        for v in s { UTF8.encode(Unicode.Scalar(v)!) { out.append($0) } }
        return out
    }

    /// One symbol per scalar (with the continuing prefix / end-of-word suffix where the model
    /// has them); unknown scalars become the unk token (fused when `fuse_unk`), or are dropped
    /// when the model has none — `BPE::merge_word`.
    private func symbols(_ word: [UInt32]) -> [Int32] {
        var ids: [Int32] = []
        ids.reserveCapacity(word.count)
        var pendingUnknown = false
        let plain = continuingPrefix == nil && endOfWordSuffix == nil
        for (k, s) in word.enumerated() {
            let id: Int32?
            if plain {
                id = vocab.id(scalar: s)
            } else {
                var bytes = Self.utf8(word[k...k])
                if k > 0, let p = continuingPrefix { bytes = p + bytes }
                if k == word.count - 1, let x = endOfWordSuffix { bytes += x }
                id = vocab.id(bytes: bytes)
            }
            if let id {
                if pendingUnknown, let unk = unknownID { ids.append(unk) }
                pendingUnknown = false
                ids.append(id)
            } else if let unk = unknownID {
                if pendingUnknown && !fuseUnknown { ids.append(unk) }
                pendingUnknown = true
            }
        }
        if pendingUnknown, let unk = unknownID { ids.append(unk) }
        return ids
    }

    /// The flawed engine (tests only): the longest vocabulary entry at each position.
    private func greedySymbols(_ word: [UInt32]) -> [Int32] {
        var ids: [Int32] = []
        var i = 0
        while i < word.count {
            var found: (Int32, Int)? = nil
            var j = word.count
            while j > i {
                if let id = vocab.id(bytes: Self.utf8(word[i..<j])) { found = (id, j); break }
                j -= 1
            }
            if let (id, end) = found {
                ids.append(id)
                i = end
            } else {
                if let unk = unknownID { ids.append(unk) }
                i += 1
            }
        }
        return ids
    }

    /// `Word::merge_all` without dropout.
    private func mergeAll(_ ids: inout [Int32]) {
        let n = ids.count
        if n < 2 { return }
        var previous = Array(-1..<(n - 1)), next = Array(1...n)
        next[n - 1] = -1
        var removed = [Bool](repeating: false, count: n)
        var queue = MergeQueue()
        for pos in 0..<(n - 1) {
            if let m = merges[Self.pair(ids[pos], ids[pos + 1])] { queue.push(rank: m >> 32, pos: pos, merged: Int32(truncatingIfNeeded: m)) }
        }
        while let top = queue.pop() {
            let pos = top.pos
            if removed[pos] || next[pos] == -1 { continue }
            let right = next[pos]
            guard let m = merges[Self.pair(ids[pos], ids[right])], Int32(truncatingIfNeeded: m) == top.merged else { continue }
            ids[pos] = top.merged
            removed[right] = true
            let after = next[right]
            next[pos] = after
            if after >= 0 && after < n { previous[after] = pos }
            if previous[pos] >= 0 {
                let p = previous[pos]
                if let m = merges[Self.pair(ids[p], ids[pos])] { queue.push(rank: m >> 32, pos: p, merged: Int32(truncatingIfNeeded: m)) }
            }
            if after >= 0 && after < n {
                if let m = merges[Self.pair(ids[pos], ids[after])] { queue.push(rank: m >> 32, pos: pos, merged: Int32(truncatingIfNeeded: m)) }
            }
        }
        var kept: [Int32] = []
        kept.reserveCapacity(n)
        for k in 0..<n where !removed[k] { kept.append(ids[k]) }
        ids = kept
    }

    @inline(__always) static func pair(_ a: Int32, _ b: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: a)) << 32 | UInt64(UInt32(bitPattern: b))
    }
}

/// A binary min-heap of pending merges ordered by (rank, position), as the Rust `Merge`'s `Ord`
/// makes its `BinaryHeap` a min-heap.
struct MergeQueue {
    struct Entry { let key: UInt64; let merged: Int32; var pos: Int { Int(key & 0xFFFF_FFFF) } }
    private var heap: [Entry] = []

    mutating func push(rank: UInt64, pos: Int, merged: Int32) {
        heap.append(Entry(key: rank << 32 | UInt64(pos), merged: merged))
        var c = heap.count - 1
        while c > 0 {
            let p = (c - 1) / 2
            if heap[p].key <= heap[c].key { break }
            heap.swapAt(p, c)
            c = p
        }
    }

    mutating func pop() -> Entry? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var p = 0
            while true {
                let l = 2 * p + 1, r = l + 1
                var m = p
                if l < heap.count && heap[l].key < heap[m].key { m = l }
                if r < heap.count && heap[r].key < heap[m].key { m = r }
                if m == p { break }
                heap.swapAt(p, m)
                p = m
            }
        }
        return top
    }
}
