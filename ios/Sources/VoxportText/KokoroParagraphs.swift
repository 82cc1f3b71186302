/// Kokoro's text clean-up before G2P, `conversion/kokoro/text/normalize.py` rule for rule over
/// code points (Python's `str`), and the `str` operations its chunker reads (`strip`, `len`).
///
/// NFC with Python's unicodedata (14.0); CR LF, CR, U+2028, U+2029, VT, FF and NEL end a
/// paragraph; control (Cc) and format (Cf) characters are dropped unless `str.isspace()`; any
/// other run of whitespace is one space; paragraphs are stripped and empty ones left out.
public enum KokoroParagraphs {
    static let newline: UInt32 = 0x0A
    static let paragraphEnds: Set<UInt32> = [0x2028, 0x2029, 0x0B, 0x0C, 0x85]

    /// `normalize.paragraphs(text)`: never an empty string.
    public static func split(_ text: String) -> [String] {
        var s = CanonicalComposition.nfc(PythonText.scalars(text), python: true)
        s = PythonText.replace(s, [0x0D, newline], [newline])
        s = s.map { $0 == 0x0D || paragraphEnds.contains($0) ? newline : $0 }
        s = s.filter(visible)
        var collapsed: [UInt32] = []
        var inSpaces = false
        for c in s {
            if c != newline && PythonText.isSpace(c) {
                if !inSpaces { collapsed.append(0x20) }
                inSpaces = true
            } else {
                collapsed.append(c)
                inSpaces = false
            }
        }
        return collapsed.split(separator: newline, omittingEmptySubsequences: true)
            .map { PythonText.strip(Array($0)) }
            .filter { !$0.isEmpty }
            .map(PythonText.string)
    }

    /// `_visible`: false for control (Cc, newline aside) and format (Cf) characters, by
    /// Python's Unicode 14.0 (a scalar assigned later is unassigned there, so kept).
    static func visible(_ c: UInt32) -> Bool {
        if c == newline || PythonText.isSpace(c) { return true }
        guard let u = Unicode.Scalar(c), UnicodeVersions.assigned(u, by: UnicodeVersions.python) else { return true }
        switch u.properties.generalCategory {
        case .control, .format: return false
        default: return true
        }
    }

    /// Python's `str.strip()`.
    public static func strip(_ s: String) -> String { PythonText.string(PythonText.strip(PythonText.scalars(s))) }

    /// Python's `str.isspace()` for one code point.
    public static func isSpace(_ s: Unicode.Scalar) -> Bool { PythonText.isSpace(s.value) }
}
