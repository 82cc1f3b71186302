import Foundation

/// One token of spaCy's tokenizer: its text, the space after it (" " or ""), and the NORM a
/// tokenizer special case sets ("n't" -> "not"); nil where none does (the lexeme's own norm).
public struct SpacyToken: Equatable, Sendable, CustomStringConvertible {
    public let text: String
    public let whitespace: String
    public let norm: String?

    public init(_ text: String, whitespace: String, norm: String? = nil) {
        self.text = text
        self.whitespace = whitespace
        self.norm = norm
    }

    public var description: String { "\(text.debugDescription)\(whitespace.isEmpty ? "" : "+ws")\(norm.map { " norm \($0.debugDescription)" } ?? "")" }
}

/// A tokenizer folder that cannot be read, with the fix.
public struct SpacyTokenizerError: Error, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
