/// The character classes the tokenizers' regexes use, over Unicode scalars.
///
/// `\p{L}`, `\p{N}` are general categories; `\s` is the White_Space property (Oniguruma's and
/// the Rust regex crate's); `\w` is the Rust regex crate's Unicode word class (Alphabetic,
/// marks, decimal digits, connector punctuation, Join_Control), which the Whitespace
/// pre-tokenizer uses. Python's `str.isspace` is a different set (it adds U+001C..U+001F and
/// has no U+200B either way): `PythonText` keeps its own. A scalar assigned after the regex
/// engines' Unicode version is in none of the classes (`UnicodeVersions.regex`).
enum CharacterClass {
    static func isLetter(_ s: UInt32) -> Bool {
        if s < 0x80 { return (s | 0x20) >= 0x61 && (s | 0x20) <= 0x7A }
        guard let u = Unicode.Scalar(s), UnicodeVersions.assigned(u, by: UnicodeVersions.regex) else { return false }
        switch u.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter: return true
        default: return false
        }
    }

    static func isNumber(_ s: UInt32) -> Bool {
        if s < 0x80 { return s >= 0x30 && s <= 0x39 }
        guard let u = Unicode.Scalar(s), UnicodeVersions.assigned(u, by: UnicodeVersions.regex) else { return false }
        switch u.properties.generalCategory {
        case .decimalNumber, .letterNumber, .otherNumber: return true
        default: return false
        }
    }

    static func isSpace(_ s: UInt32) -> Bool {
        if s < 0x80 { return s == 0x20 || (s >= 0x09 && s <= 0x0D) }
        guard let u = Unicode.Scalar(s), UnicodeVersions.assigned(u, by: UnicodeVersions.regex) else { return false }
        return u.properties.isWhitespace
    }

    static func isWord(_ s: UInt32) -> Bool {
        if s < 0x80 { return isLetter(s) || isNumber(s) || s == 0x5F }
        guard let u = Unicode.Scalar(s), UnicodeVersions.assigned(u, by: UnicodeVersions.regex) else { return false }
        if u.properties.isAlphabetic || u.properties.isJoinControl { return true }
        switch u.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return false
        }
    }

    static func isLineBreak(_ s: UInt32) -> Bool { s == 0x0A || s == 0x0D }
}
