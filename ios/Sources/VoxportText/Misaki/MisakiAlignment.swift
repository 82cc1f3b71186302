/// spaCy's `Alignment.from_strings(A, B).y2x.data` (spacy/training/align.pyx `get_alignments`):
/// for each token of B in order, the sorted indices of the A tokens sharing its characters,
/// flattened into one array, as misaki's `tokenize` reads it.
enum MisakiAlignment {
    typealias Scalars = [UInt32]

    struct Mismatch: Error {}

    static func y2xData(_ a: [Scalars], _ b: [Scalars]) throws -> [Int] {
        // `len(x.lower())` per token must equal the joined lower string's length (checked by spaCy).
        let lowerA = a.map(PythonText.lower), lowerB = b.map(PythonText.lower)
        let charA = lowerA.enumerated().flatMap { i, x in Array(repeating: i, count: x.count) }
        let charB = lowerB.enumerated().flatMap { i, x in Array(repeating: i, count: x.count) }
        let strA = PythonText.lower(a.flatMap { $0 }), strB = PythonText.lower(b.flatMap { $0 })
        guard strA.filter({ !PythonText.isSpace($0) }) == strB.filter({ !PythonText.isSpace($0) }),
            strA.count == charA.count, strB.count == charB.count
        else { throw Mismatch() }
        var ia = 0, ib = 0, prevA = -1, prevB = -1
        var b2a: [Set<Int>] = []
        while ia < strA.count && ib < strB.count {
            let ta = charA[ia], tb = charB[ib]
            if prevB != tb { b2a.append([]) }
            if a[ta] == b[tb] && (ia == 0 || charA[ia - 1] < ta) && (ib == 0 || charB[ib - 1] < tb) {
                b2a[b2a.count - 1].insert(ta)
                ia += a[ta].count
                ib += b[tb].count
            } else if strA[ia] == strB[ib] {
                b2a[b2a.count - 1].insert(ta)
                ia += 1
                ib += 1
            } else if PythonText.isSpace(strA[ia]) {
                ia += 1
            } else if PythonText.isSpace(strB[ib]) {
                ib += 1
            } else {
                throw Mismatch()
            }
            prevA = ta
            prevB = tb
        }
        _ = prevA
        // Trailing unaligned tokens get empty sets: nothing in the flattened data.
        return b2a.flatMap { $0.sorted() }
    }
}
