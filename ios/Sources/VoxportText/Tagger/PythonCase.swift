/// Python 3.11's `str` predicates and `lower()` over Unicode scalars, as spaCy's lexeme
/// attributes call them (`word_shape`: `isalpha`, `isupper`, `isdigit`; NORM: `lower`). A
/// scalar assigned after Python's Unicode version (14.0) has no letter, case or digit there.
enum PythonCase {
    private static func known(_ s: UInt32) -> Unicode.Scalar? {
        guard let u = Unicode.Scalar(s), UnicodeVersions.assigned(u, by: UnicodeVersions.python) else { return nil }
        return u
    }

    /// `c.isalpha()`: general category Lu, Ll, Lt, Lm or Lo.
    static func isAlpha(_ s: UInt32) -> Bool {
        if s < 0x80 { return (s | 0x20) >= 0x61 && (s | 0x20) <= 0x7A }
        guard let u = known(s) else { return false }
        switch u.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    /// `c.isupper()` for one character: the Uppercase property.
    static func isUpper(_ s: UInt32) -> Bool {
        if s < 0x80 { return s >= 0x41 && s <= 0x5A }
        return known(s)?.properties.isUppercase ?? false
    }

    /// `c.isdigit()`: a decimal or digit numeric type (so "²" is a digit, "½" is not).
    static func isDigit(_ s: UInt32) -> Bool {
        if s < 0x80 { return s >= 0x30 && s <= 0x39 }
        guard let t = known(s)?.properties.numericType else { return false }
        return t == .decimal || t == .digit
    }

    /// `s.lower()`: full lowercase mappings, and capital sigma final where Python makes it so.
    static func lower(_ s: [UInt32]) -> [UInt32] {
        var out: [UInt32] = []
        out.reserveCapacity(s.count)
        for (i, c) in s.enumerated() {
            if c < 0x80 {
                out.append(c >= 0x41 && c <= 0x5A ? c + 0x20 : c)
            } else if c == 0x3A3 {
                out.append(finalSigma(s, i) ? 0x3C2 : 0x3C3)
            } else if let u = known(c) {
                out += u.properties.lowercaseMapping.unicodeScalars.map(\.value)
            } else {
                out.append(c)
            }
        }
        return out
    }

    private static func isCased(_ s: UInt32) -> Bool { known(s)?.properties.isCased ?? false }
    private static func isCaseIgnorable(_ s: UInt32) -> Bool { known(s)?.properties.isCaseIgnorable ?? false }

    /// CPython's `handle_capital_sigma`: cased, case-ignorables, Σ, and no cased letter after.
    private static func finalSigma(_ s: [UInt32], _ i: Int) -> Bool {
        var j = i - 1
        while j >= 0, isCaseIgnorable(s[j]) { j -= 1 }
        guard j >= 0, isCased(s[j]) else { return false }
        var k = i + 1
        while k < s.count, isCaseIgnorable(s[k]) { k += 1 }
        return k == s.count || !isCased(s[k])
    }
}
