/// Python's `str` operations the publishers' text code uses, over Unicode scalars (a Python
/// `str` is a sequence of code points; Swift's `String` compares and searches by grapheme
/// cluster and canonical equivalence, which would replace "…" inside "…" + U+0301 differently).
enum PythonText {
    /// `str.isspace()` (Python 3.11): White_Space less nothing, plus U+001C..U+001F.
    static func isSpace(_ s: UInt32) -> Bool {
        switch s {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default: return false
        }
    }

    /// `str.split()` with no separator.
    static func split(_ s: [UInt32]) -> [[UInt32]] {
        var out: [[UInt32]] = []
        var current: [UInt32] = []
        for c in s {
            if isSpace(c) {
                if !current.isEmpty { out.append(current); current = [] }
            } else {
                current.append(c)
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// `" ".join(s.split())`.
    static func collapseSpaces(_ s: [UInt32]) -> [UInt32] { join(split(s), 0x20) }

    static func join(_ parts: [[UInt32]], _ separator: UInt32) -> [UInt32] {
        var out: [UInt32] = []
        for (k, p) in parts.enumerated() {
            if k > 0 { out.append(separator) }
            out += p
        }
        return out
    }

    /// `str.strip()`.
    static func strip(_ s: [UInt32]) -> [UInt32] {
        guard let first = s.firstIndex(where: { !isSpace($0) }), let last = s.lastIndex(where: { !isSpace($0) }) else { return [] }
        return Array(s[first...last])
    }

    /// `str.replace(old, new)`: non-overlapping, left to right.
    static func replace(_ s: [UInt32], _ old: [UInt32], _ new: [UInt32]) -> [UInt32] {
        guard !old.isEmpty, s.count >= old.count else { return s }
        var out: [UInt32] = []
        out.reserveCapacity(s.count)
        var i = 0
        while i < s.count {
            if i + old.count <= s.count, s[i..<(i + old.count)].elementsEqual(old) {
                out += new
                i += old.count
            } else {
                out.append(s[i])
                i += 1
            }
        }
        return out
    }

    static func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }

    static func string(_ s: [UInt32]) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: s.map { Unicode.Scalar($0)! })
        return String(view)
    }
}
