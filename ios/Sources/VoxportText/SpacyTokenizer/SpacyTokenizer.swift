import Foundation

/// spaCy 3.8's `Tokenizer` as misaki's `en_core_web_sm` pipeline configures it, from the folder
/// `conversion.kokoro.tokenizer.write_tokenizer` writes: whitespace split, special cases,
/// prefix / suffix / infix search, `token_match` / `url_match`, and the special-case matcher
/// pass that runs after affix splitting (spacy/tokenizer.pyx, `__call__`).
///
/// Strings are compared by their UTF-16 units, never by Swift's canonical equivalence, because
/// spaCy keys its special cases and matches its patterns by exact code points.
public final class SpacyTokenizer: Sendable {
    static let format = "voxport-spacy-tokenizer/1"

    typealias Key = [UInt16]
    struct Piece: Sendable {
        let text: String
        let norm: String?
    }

    let prefix: SpacyPattern?
    let suffix: SpacyPattern?
    let infix: SpacyPattern?
    let tokenMatch: SpacyPattern?
    let urlMatch: SpacyPattern?
    /// `Tokenizer._specials` / `rules`: the string -> its pieces.
    let specials: [Key: [Piece]]
    /// `Tokenizer._special_matcher`'s patterns (the special case's own affix tokenization),
    /// by their first token's text.
    let matcherPatterns: [Key: [[Key]]]

    public init(folder: URL) throws {
        let url = folder.appendingPathComponent("tokenizer.json")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw SpacyTokenizerError("no \(url.path): write the tokenizer folder with conversion.kokoro.tokenizer.write_tokenizer")
        }
        let json = try ExactJSON.parse([UInt8](data))
        func bad(_ what: String) -> SpacyTokenizerError {
            SpacyTokenizerError("\(url.path): \(what) missing or malformed; rewrite it with write_tokenizer")
        }
        guard json["format"]?.string == Self.format else {
            throw SpacyTokenizerError("\(url.path) is \(json["format"]?.string ?? "of no known format"), this tokenizer reads \(Self.format): rewrite it with write_tokenizer")
        }
        func pattern(_ name: String) throws -> SpacyPattern? {
            guard let value = json[name] else { throw bad(name) }
            if value.isNull { return nil }
            guard let s = value.string else { throw bad(name) }
            return try SpacyPattern(s, name)
        }
        prefix = try pattern("prefix")
        suffix = try pattern("suffix")
        infix = try pattern("infix")
        tokenMatch = try pattern("token_match")
        urlMatch = try pattern("url_match")
        guard let faster = json["faster_heuristics"]?.bool, let rules = json["rules"]?.pairs else { throw bad("rules") }
        var specials: [Key: [Piece]] = [:]
        for (string, pieces) in rules {
            guard let list = pieces.array, !list.isEmpty else { throw bad("rules[\(string.debugDescription)]") }
            specials[Array(string.utf16)] = try list.map { p in
                guard let pair = p.array, pair.count == 2, let orth = pair[0].string else { throw bad("rules[\(string.debugDescription)]") }
                return Piece(text: orth, norm: pair[1].string)
            }
        }
        self.specials = specials
        // add_special_case: the matcher learns a special case (as it tokenizes without special
        // cases) only where an affix or infix pattern touches it or it holds a space.
        var patterns: [Key: [[Key]]] = [:]
        for (string, _) in rules {
            let s = string as NSString
            guard !faster || (prefix?.searchLength(s) ?? 0) != 0 || !(infix?.all(s).isEmpty ?? true)
                || (suffix?.searchLength(s) ?? 0) != 0 || string.utf16.contains(0x20)
            else { continue }
            let tokens = Self.tokenizeAffixes(string, prefix: prefix, suffix: suffix, infix: infix, tokenMatch: tokenMatch, urlMatch: urlMatch, specials: nil)
            guard let first = tokens.first else { continue }
            patterns[Array(first.text.utf16), default: []].append(tokens.map { Array($0.text.utf16) })
        }
        matcherPatterns = patterns
    }

    /// `nlp.tokenizer(text)`: the tokens, each with its trailing space and any special-case NORM.
    public func tokenize(_ text: String) -> [SpacyToken] {
        var doc = Self.tokenizeAffixes(text, prefix: prefix, suffix: suffix, infix: infix, tokenMatch: tokenMatch, urlMatch: urlMatch, specials: specials)
        applySpecialCases(&doc)
        return doc.map { SpacyToken($0.text, whitespace: $0.spacy ? " " : "", norm: $0.norm) }
    }
}
