import Foundation

/// The publishers' `punc_norm` (chatterbox/tts.py, chatterbox/tts_turbo.py), code point for code
/// point: the two differ only in their table of replacements, applied in order.
public struct PuncNorm: Sendable {
    private let replacements: [([UInt32], [UInt32])]
    private static let enders: Set<UInt32> = [0x2E, 0x21, 0x3F, 0x2D, 0x2C]

    /// `punc_to_replace`, in the publisher's order (each replaces every occurrence in turn).
    public init(replacing table: [(String, String)]) {
        replacements = table.map { (PythonText.scalars($0.0), PythonText.scalars($0.1)) }
    }

    public func callAsFunction(_ text: String) -> String {
        var s = PythonText.scalars(text)
        if s.isEmpty { return "You need to add some text for me to talk." }
        // `text[0].islower()` (the Lowercase property) -> `text[0].upper()` (full mapping), with
        // Python 3.11's Unicode 14.0: a later scalar is unassigned there, and a mapping to a
        // later scalar (U+019B -> U+A7DC, Unicode 16.0) does not exist there.
        if let first = Unicode.Scalar(s[0]), UnicodeVersions.assigned(first, by: UnicodeVersions.python),
            first.properties.isLowercase
        {
            let upper = first.properties.uppercaseMapping.unicodeScalars
            if upper.allSatisfy({ UnicodeVersions.assigned($0, by: UnicodeVersions.python) }) {
                s = upper.map(\.value) + s[1...]
            }
        }
        s = PythonText.collapseSpaces(s)
        for (old, new) in replacements { s = PythonText.replace(s, old, new) }
        while s.last == 0x20 { s.removeLast() }
        if !(s.last.map(Self.enders.contains) ?? false) { s.append(0x2E) }
        return PythonText.string(s)
    }
}
