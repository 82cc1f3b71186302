import Foundation

/// One of spaCy's compiled Python regexes, run by ICU. The exported source is the Python
/// pattern verbatim; the only syntax ICU lacks is the inline `(?u)` flag, which a Python 3 str
/// pattern implies anyway, so it is dropped. Everything else these patterns use (`\uXXXX`,
/// `\UXXXXXXXX`, bracket classes of literals and ranges, bounded lookbehind, `^`, `$`, `\d`,
/// `\w`, `\S`) ICU reads as Python does for the strings the tokenizer hands it: a span never
/// holds whitespace beside other text, so `$` before a final newline never arises. The Swift
/// test holds this to spaCy's own output.
struct SpacyPattern: @unchecked Sendable {
    // NSRegularExpression is immutable after init and documented thread-safe for matching.
    let regex: NSRegularExpression

    init(_ python: String, _ what: String) throws {
        var source = python
        if source.hasPrefix("(?u)") { source.removeFirst(4) }
        do {
            regex = try NSRegularExpression(pattern: source, options: [])
        } catch {
            throw SpacyTokenizerError("the tokenizer's \(what) pattern does not compile in ICU (\(error)): rewrite the folder with write_tokenizer")
        }
    }

    /// `re.search(s)`: the leftmost match's length in UTF-16 units, 0 when none.
    func searchLength(_ s: NSString) -> Int {
        regex.firstMatch(in: s as String, options: [], range: NSRange(location: 0, length: s.length))?.range.length ?? 0
    }

    /// `re.match(s) is not None`: a match anchored at the start.
    func matches(_ s: NSString) -> Bool {
        regex.firstMatch(in: s as String, options: [.anchored], range: NSRange(location: 0, length: s.length)) != nil
    }

    /// `re.finditer(s)`: the matches' ranges, left to right, non-overlapping.
    func all(_ s: NSString) -> [NSRange] {
        regex.matches(in: s as String, options: [], range: NSRange(location: 0, length: s.length)).map(\.range)
    }
}
