import Foundation

/// Python 3.11's case, letter and digit rules over Unicode scalars (`PythonText`'s other half),
/// as misaki's `Lexicon` and spaCy's lexeme attributes call them: a Python `str` is a sequence of
/// code points, its case rules are Unicode's full mappings (plus Final Sigma in `lower`),
/// `isalpha` is the general categories L*, and its tables are Unicode 14.0
/// (`UnicodeVersions.python`): a scalar assigned later has no case, is no letter and no digit.
/// Swift's `String` would compare by canonical equivalence ("K" == KELVIN SIGN) instead.
extension PythonText {
    typealias Scalars = [UInt32]

    static func isASCII(_ s: Scalars) -> Bool { s.allSatisfy { $0 < 0x80 } }

    private static func known(_ c: UInt32) -> Unicode.Scalar? {
        guard let u = Unicode.Scalar(c), UnicodeVersions.assigned(u, by: UnicodeVersions.python) else { return nil }
        return u
    }

    /// `c.isalpha()` for one scalar.
    static func isAlpha(_ c: UInt32) -> Bool {
        if c < 0x80 { return (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A }
        guard let u = known(c) else { return false }
        switch u.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    /// `s.isalpha()`: non-empty and every scalar a letter.
    static func isAlpha(_ s: Scalars) -> Bool { !s.isEmpty && s.allSatisfy(isAlpha) }

    /// `c.isdigit()`: Numeric_Type Decimal or Digit.
    static func digitValue(_ c: UInt32) -> Int? {
        if c < 0x80 { return c >= 0x30 && c <= 0x39 ? Int(c - 0x30) : nil }
        guard let u = known(c), let type = u.properties.numericType, type == .decimal || type == .digit,
            let v = u.properties.numericValue, v == v.rounded()
        else { return nil }
        return Int(v)
    }

    /// `s.upper()`: each scalar's full uppercase mapping.
    static func upper(_ s: Scalars) -> Scalars {
        var out: Scalars = []
        out.reserveCapacity(s.count)
        for c in s {
            if c < 0x80 {
                out.append(c >= 0x61 && c <= 0x7A ? c - 0x20 : c)
            } else if let u = known(c) {
                out += scalars(u.properties.uppercaseMapping)
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// `s.lower()`: each scalar's full lowercase mapping, and CPython's Final_Sigma rule for
    /// U+03A3 (final form when a cased letter precedes and none follows, skipping
    /// case-ignorables).
    static func lower(_ s: Scalars) -> Scalars {
        var out: Scalars = []
        out.reserveCapacity(s.count)
        for (i, c) in s.enumerated() {
            if c < 0x80 {
                out.append(c >= 0x41 && c <= 0x5A ? c + 0x20 : c)
            } else if c == 0x3A3 {
                out.append(finalSigma(s, i) ? 0x3C2 : 0x3C3)
            } else if let u = known(c) {
                out += scalars(u.properties.lowercaseMapping)
            } else {
                out.append(c)
            }
        }
        return out
    }

    private static func isCased(_ c: UInt32) -> Bool { known(c)?.properties.isCased ?? false }
    private static func isCaseIgnorable(_ c: UInt32) -> Bool { known(c)?.properties.isCaseIgnorable ?? false }

    private static func finalSigma(_ s: Scalars, _ i: Int) -> Bool {
        var j = i - 1
        while j >= 0, isCaseIgnorable(s[j]) { j -= 1 }
        guard j >= 0, isCased(s[j]) else { return false }
        var k = i + 1
        while k < s.count, isCaseIgnorable(s[k]) { k += 1 }
        return k == s.count || !isCased(s[k])
    }

    /// `unicodedata.normalize('NFKC', s)`; ASCII is its own NFKC. Other text goes through
    /// Foundation (ICU's tables): exact for what misaki's lexicon can then match, since every
    /// key is ASCII and only scalars that normalise to ASCII can reach one.
    static func nfkc(_ s: Scalars) -> Scalars {
        if isASCII(s) { return s }
        return scalars(string(s).precomposedStringWithCompatibilityMapping)
    }

    static func replace(_ s: Scalars, _ old: UInt32, with new: Scalars) -> Scalars {
        guard s.contains(old) else { return s }
        var out: Scalars = []
        for c in s { if c == old { out += new } else { out.append(c) } }
        return out
    }

    static func hasSuffix(_ s: Scalars, _ suffix: String) -> Bool {
        let t = scalars(suffix)
        return s.count >= t.count && s[(s.count - t.count)...].elementsEqual(t)
    }

    static func equals(_ s: Scalars, _ t: String) -> Bool { s.elementsEqual(t.unicodeScalars.lazy.map(\.value)) }

    /// `c.isupper()` for one scalar: the Uppercase property.
    static func isUpper(_ c: UInt32) -> Bool {
        if c < 0x80 { return c >= 0x41 && c <= 0x5A }
        return known(c)?.properties.isUppercase ?? false
    }

    /// `c.isdigit()`: Numeric_Type Decimal or Digit (so "²" is a digit, "½" is not).
    static func isDigit(_ c: UInt32) -> Bool {
        if c < 0x80 { return c >= 0x30 && c <= 0x39 }
        guard let t = known(c)?.properties.numericType else { return false }
        return t == .decimal || t == .digit
    }
}
