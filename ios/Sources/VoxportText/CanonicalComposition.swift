/// NFC as tokenizers computes it: canonical decomposition, canonical ordering, canonical
/// composition (UAX #15), over the Unicode 9.0 data its normalization crate holds.
///
/// Written out rather than Foundation's `precomposedStringWithCanonicalMapping`, which on Linux
/// composes Hangul jamo outside the composable ranges (U+1113 U+116A became U+FFFD), leaves
/// the marks of U+0F73/0F75/0F81 unordered, and composes a supplementary-plane starter as its
/// low 16 bits (U+20065 U+0327 became U+0229), all found by the tokenizer corpus. The
/// decompositions come from Python's unicodedata (`CanonicalDecompositions`, generated), the
/// combining classes and composition exclusions from Swift's own tables; a scalar assigned
/// after 9.0 is, as in tokenizers, a starter with no decomposition (these never change for
/// assigned characters, so newer tables agree on all the rest).
enum CanonicalComposition {
    static let sBase: UInt32 = 0xAC00, lBase: UInt32 = 0x1100, vBase: UInt32 = 0x1161, tBase: UInt32 = 0x11A7
    static let lCount: UInt32 = 19, vCount: UInt32 = 21, tCount: UInt32 = 28, sCount: UInt32 = 11_172

    struct Tables {
        var decompositions: [UInt32: (UInt32, UInt32)] = [:]
        var compositions: [UInt64: UInt32] = [:]
    }

    static let tables = makeTables(UnicodeVersions.normalization)
    /// Python's `unicodedata.normalize("NFC")` (Kokoro's text clean-up) holds newer data.
    static let pythonTables = makeTables(UnicodeVersions.python)

    static func makeTables(_ version: (major: Int, minor: Int)) -> Tables {
        var t = Tables()
        let flat = CanonicalDecompositions.table
        for k in stride(from: 0, to: flat.count, by: 3) {
            let c = flat[k], a = flat[k + 1], b = flat[k + 2]
            guard let u = Unicode.Scalar(c), UnicodeVersions.assigned(u, by: version) else { continue }
            t.decompositions[c] = (a, b)
            if b != 0 && !u.properties.isFullCompositionExclusion {
                t.compositions[UInt64(a) << 32 | UInt64(b)] = c
            }
        }
        return t
    }

    /// The combining class tokenizers sees: 0 for a scalar assigned after its Unicode version.
    static func combiningClass(_ c: UInt32, _ version: (major: Int, minor: Int) = UnicodeVersions.normalization) -> UInt8 {
        if c < 0x300 { return 0 }
        guard let u = Unicode.Scalar(c), UnicodeVersions.assigned(u, by: version) else { return 0 }
        return u.properties.canonicalCombiningClass.rawValue
    }

    static func decompose(_ c: UInt32, into out: inout [UInt32], _ tables: Tables = Self.tables) {
        if c >= sBase && c < sBase + sCount {
            let i = c - sBase
            out.append(lBase + i / (vCount * tCount))
            out.append(vBase + (i % (vCount * tCount)) / tCount)
            if i % tCount != 0 { out.append(tBase + i % tCount) }
            return
        }
        guard c >= 0xC0, let (a, b) = tables.decompositions[c] else {
            out.append(c)
            return
        }
        decompose(a, into: &out, tables)
        if b != 0 { decompose(b, into: &out, tables) }
    }

    static func compose(_ a: UInt32, _ b: UInt32, _ tables: Tables = Self.tables) -> UInt32? {
        if a >= lBase && a < lBase + lCount && b >= vBase && b < vBase + vCount {
            return sBase + ((a - lBase) * vCount + (b - vBase)) * tCount
        }
        if a >= sBase && a < sBase + sCount && (a - sBase) % tCount == 0 && b > tBase && b < tBase + tCount {
            return a + (b - tBase)
        }
        return tables.compositions[UInt64(a) << 32 | UInt64(b)]
    }

    /// `python`: Python's unicodedata (Unicode 14.0) rather than tokenizers' 9.0.
    static func nfc(_ s: [UInt32], python: Bool = false) -> [UInt32] {
        let version = python ? UnicodeVersions.python : UnicodeVersions.normalization
        let tables = python ? Self.pythonTables : Self.tables
        // Below U+0300 nothing decomposes, reorders or composes (every mark lies above).
        if s.allSatisfy({ $0 < 0x300 }) { return s }
        var d: [UInt32] = []
        d.reserveCapacity(s.count + 8)
        for c in s { decompose(c, into: &d, tables) }
        // Canonical ordering: each run of marks stably sorted by combining class.
        var classes = d.map { combiningClass($0, version) }
        var i = 0
        while i < d.count {
            guard classes[i] != 0 else { i += 1; continue }
            var j = i
            while j < d.count && classes[j] != 0 { j += 1 }
            if j - i > 1 {
                let sorted = (i..<j).sorted { classes[$0] != classes[$1] ? classes[$0] < classes[$1] : $0 < $1 }
                let (ds, cs) = (sorted.map { d[$0] }, sorted.map { classes[$0] })
                d.replaceSubrange(i..<j, with: ds)
                classes.replaceSubrange(i..<j, with: cs)
            }
            i = j
        }
        // Canonical composition, as UAX #15's sample code runs it.
        guard !d.isEmpty else { return d }
        var out: [UInt32] = [d[0]]
        var starter = 0
        var lastClass: Int = classes[0] == 0 ? 0 : 256
        for k in 1..<d.count {
            let c = d[k], cc = Int(classes[k])
            if lastClass < cc || lastClass == 0, let composite = compose(out[starter], c, tables) {
                out[starter] = composite
                continue
            }
            if cc == 0 { starter = out.count }
            lastClass = cc
            out.append(c)
        }
        return out
    }
}
