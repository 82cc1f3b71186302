/// A tokenizer file this module cannot read exactly, or text it cannot encode: one line that
/// names what and where (never a silent approximation of the publisher's tokenizer).
public struct TokenizerError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
