/// Which Unicode version each reference implementation's tables hold, measured (issue 30) by
/// probing characters assigned in each version, and the rule that a scalar assigned later is
/// unassigned there (no letter, digit, case or mark; a starter that never composes). Swift's
/// own tables are newer (Unicode 17 in Swift 6.3: U+32688, CJK Extension J, is a letter here
/// and a symbol to tokenizers).
enum UnicodeVersions {
    /// Oniguruma (GPT-2's and Qwen2's regexes) and the Rust regex crate (Whitespace) in
    /// tokenizers 0.23.3: U+1C89 (16.0) is a letter, U+323B0 (17.0) is not.
    static let regex = (major: 16, minor: 0)
    /// tokenizers' NFC (the unicode-normalization-alignments crate): U+1E944 (9.0) is reordered
    /// as a mark, U+1DF6 (10.0) is not.
    static let normalization = (major: 9, minor: 0)
    /// Python 3.11's `unicodedata` (the hosts' `str` methods: punc_norm, split, `\d`).
    static let python = (major: 14, minor: 0)

    static func assigned(_ s: Unicode.Scalar, by version: (major: Int, minor: Int)) -> Bool {
        guard let age = s.properties.age else { return false }
        return (age.major, age.minor) <= (version.major, version.minor)
    }

    static func assigned(_ s: UInt32, by version: (major: Int, minor: Int)) -> Bool {
        guard let u = Unicode.Scalar(s) else { return false }
        return assigned(u, by: version)
    }
}
