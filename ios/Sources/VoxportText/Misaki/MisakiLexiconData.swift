import Foundation

/// One of misaki's dictionaries (gold or silver) as `conversion/kokoro/lexicon/writer.py` writes
/// it: as misaki packages it, `key TAB phonemes` or `key TAB TAB tag=phonemes TAB tag ...` per
/// line, grown on load as `Lexicon.grow_dictionary` does (`grow`).
///
/// Keys are ASCII bytes (checked; bytes keep the comparison exact where `String` would merge
/// canonically equivalent spellings); phonemes are decoded to scalars when a word is looked up.
/// Loading is one pass over the file's bytes with nothing allocated per entry: the bytes are kept
/// once (grown keys appended after them), each entry is a record of byte ranges in one flat
/// array, and an open-addressing table maps keys to records.
struct MisakiDictionary: Sendable {
    enum Entry: Sendable, Equatable {
        case plain([UInt32])
        /// Part-of-speech tag -> phonemes; nil is misaki's `None` (no reading for that tag).
        case tagged([String: [UInt32]?])
    }

    static let header = "# misaki 0.9.4 en lexicon v2: key\\tphonemes | key\\t\\ttag=phonemes\\t...\n"

    /// An entry as byte ranges of `bytes`: its key, and its phonemes (plain) or its
    /// `tag=phonemes TAB tag ...` fields (tagged).
    struct Record: Sendable {
        var keyStart: Int32
        var keyCount: Int32
        var valueStart: Int32
        var valueEnd: Int32
        var tagged: Bool
    }

    private let bytes: [UInt8]
    private let records: [Record]
    /// Record index per slot, -1 where empty; a power of two long, at most half full.
    private let slots: [Int32]

    var count: Int { records.count }

    subscript(word: [UInt32]) -> Entry? {
        guard let r = find(word) else { return nil }
        return entry(records[r])
    }

    func contains(_ word: [UInt32]) -> Bool { find(word) != nil }

    /// Every key and entry, in no particular order (the grow test compares them all).
    func allEntries() -> [(key: [UInt8], entry: Entry)] {
        records.map { r in (Array(bytes[Int(r.keyStart)..<Int(r.keyStart + r.keyCount)]), entry(r)) }
    }

    init(contentsOf url: URL, grow: Bool = true) throws {
        let file = [UInt8](try Data(contentsOf: url))
        let fix = "rewrite it with conversion.kokoro.lexicon.write_lexicon (in a bundle: re-export it with `voxport export kokoro --overwrite`)"
        let head = Array(Self.header.utf8)
        guard file.starts(with: head), file.last == 0x0A, file.count < Int(Int32.max) else {
            throw MisakiLexiconError("\(url.path) is not a misaki lexicon v2 file (header or final newline missing); \(fix)")
        }
        let originals = try file.withUnsafeBufferPointer { b in
            var out: [Record] = []
            out.reserveCapacity(b.count / 24)
            var at = head.count
            while at < b.count {
                var tab = at, ascii = true
                while b[tab] != 0x09 && b[tab] != 0x0A {
                    ascii = ascii && b[tab] < 0x80
                    tab += 1
                }
                var end = tab, tabs = 0
                while b[end] != 0x0A {
                    if b[end] == 0x09 { tabs += 1 }
                    end += 1
                }
                // `key TAB phonemes`, or `key TAB TAB fields` (the empty phonemes mark a tagged entry).
                let tagged = tabs > 1
                guard tab > at, ascii, tabs == 1 || (tabs >= 2 && b[tab + 1] == 0x09 && end > tab + 2) else {
                    throw MisakiLexiconError("\(url.path): malformed line at byte \(at) (keys are ASCII); \(fix)")
                }
                out.append(
                    Record(
                        keyStart: Int32(at), keyCount: Int32(tab - at), valueStart: Int32(tagged ? tab + 2 : tab + 1),
                        valueEnd: Int32(end), tagged: tagged))
                at = end + 1
            }
            return out
        }
        var table = Table(bytes: file, entries: grow ? 2 * originals.count : originals.count)
        for r in originals where !table.insert(r) {
            throw MisakiLexiconError("\(url.path): key at byte \(r.keyStart) is there twice; \(fix)")
        }
        if grow {
            // grow_dictionary returns `{**e, **d}`: a grown key never replaces one the file has.
            // No two keys grow into one (a grown key flipped back is its source), so the order
            // misaki fills `e` in does not matter.
            for r in originals {
                guard let first = Self.grownFirstByte(table.bytes, r) else { continue }
                _ = table.insert(table.appendKey(of: r, first: first))
            }
        }
        bytes = table.bytes
        records = table.records
        slots = table.slots
    }

    /// `Lexicon.grow_dictionary`'s rule for one key (misaki/en.py), on ASCII where Python's
    /// `lower` and `capitalize` change A-Z and a-z only: the first byte of the key it adds,
    /// the rest being the key's own; nil when it adds none.
    ///
    ///     if len(k) < 2: continue
    ///     if k == k.lower():
    ///         if k != k.capitalize(): e[k.capitalize()] = v   # first a small letter
    ///     elif k == k.lower().capitalize(): e[k.lower()] = v  # first a capital
    ///
    /// Both need the rest of the key free of capitals.
    static func grownFirstByte(_ b: [UInt8], _ r: Record) -> UInt8? {
        let start = Int(r.keyStart), n = Int(r.keyCount)
        guard n >= 2 else { return nil }
        for j in start + 1..<start + n where isCapital(b[j]) { return nil }
        let first = b[start]
        if isSmall(first) { return first - 0x20 }  // k.capitalize()
        if isCapital(first) { return first + 0x20 }  // k.lower()
        return nil
    }

    private static func isCapital(_ c: UInt8) -> Bool { c >= 0x41 && c <= 0x5A }
    private static func isSmall(_ c: UInt8) -> Bool { c >= 0x61 && c <= 0x7A }

    static let fnvBasis: UInt64 = 0xcbf2_9ce4_8422_2325, fnvPrime: UInt64 = 0x100_0000_01b3

    /// The table while it is filled: records are added only when their key is new.
    private struct Table {
        var bytes: [UInt8]
        var records: [Record] = []
        var slots: [Int32]

        init(bytes: [UInt8], entries: Int) {
            self.bytes = bytes
            records.reserveCapacity(entries)
            var capacity = 16
            while capacity < 2 * entries { capacity *= 2 }
            slots = [Int32](repeating: -1, count: capacity)
        }

        /// `r`'s key with its first byte replaced, appended to `bytes`; the record reads it there.
        mutating func appendKey(of r: Record, first: UInt8) -> Record {
            var grown = r
            grown.keyStart = Int32(bytes.count)
            bytes.append(first)
            // Byte by byte: appending a slice of `bytes` to itself would copy the whole buffer.
            for j in Int(r.keyStart) + 1..<Int(r.keyStart + r.keyCount) { bytes.append(bytes[j]) }
            return grown
        }

        /// Add `r` unless its key is there already (false).
        mutating func insert(_ r: Record) -> Bool {
            let start = Int(r.keyStart), end = start + Int(r.keyCount)
            var h = MisakiDictionary.fnvBasis
            for j in start..<end { h = (h ^ UInt64(bytes[j])) &* MisakiDictionary.fnvPrime }
            let mask = slots.count - 1
            var slot = Int(truncatingIfNeeded: h ^ (h >> 32)) & mask
            while slots[slot] >= 0 {
                let o = records[Int(slots[slot])]
                if o.keyCount == r.keyCount && bytes[Int(o.keyStart)..<Int(o.keyStart + o.keyCount)] == bytes[start..<end] {
                    return false
                }
                slot = (slot + 1) & mask
            }
            slots[slot] = Int32(records.count)
            records.append(r)
            return true
        }
    }

    private func find(_ word: [UInt32]) -> Int? {
        var h = Self.fnvBasis
        for c in word {
            guard c < 0x80 else { return nil }  // every key is ASCII
            h = (h ^ UInt64(c)) &* Self.fnvPrime
        }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: h ^ (h >> 32)) & mask
        while true {
            let r = slots[slot]
            if r < 0 { return nil }
            let rec = records[Int(r)]
            if Int(rec.keyCount) == word.count {
                let start = Int(rec.keyStart)
                var same = true
                for (j, c) in word.enumerated() where bytes[start + j] != UInt8(c) {
                    same = false
                    break
                }
                if same { return Int(r) }
            }
            slot = (slot + 1) & mask
        }
    }

    private func entry(_ r: Record) -> Entry {
        let value = bytes[Int(r.valueStart)..<Int(r.valueEnd)]
        guard r.tagged else { return .plain(Self.decode(value)) }
        var tags: [String: [UInt32]?] = [:]
        for f in value.split(separator: 0x09, omittingEmptySubsequences: false) {
            if let eq = f.firstIndex(of: 0x3D) {
                tags[String(decoding: f[f.startIndex..<eq], as: UTF8.self)] = .some(Self.decode(f[(eq + 1)...]))
            } else {
                tags[String(decoding: f, as: UTF8.self)] = .some(nil)
            }
        }
        return .tagged(tags)
    }

    private static func decode(_ utf8: ArraySlice<UInt8>) -> [UInt32] {
        PythonText.scalars(String(decoding: utf8, as: UTF8.self))
    }
}

public struct MisakiLexiconError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
