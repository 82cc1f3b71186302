import Foundation

/// One chunk of a budgeted front end's split: the text after punc_norm and its ids.
public struct TextChunk: Equatable, Sendable {
    /// After punc_norm.
    public let text: String
    /// What the front end's `ids` gives for the chunk (Chatterbox: SOT + tokens + EOT; Turbo:
    /// the tokens alone).
    public let ids: [Int32]
}

/// A front end that normalises, tokenises with the bundle's tokenizer.json, and splits long text
/// to a budget of ids (Python's `TextTokenizer.chunks`, Chatterbox's and Turbo's alike). A model
/// gives its punc_norm, its ids and its empty-text message; the split is this one.
public protocol BudgetedText: Sendable {
    /// The front end's error for empty or blank text (Python's wording).
    static var emptyTextError: String { get }
    /// The publisher's punc_norm for the model, code point for code point.
    static func puncNorm(_ text: String) -> String

    var tokenizer: Tokenizer { get }
    init(tokenizer: Tokenizer)
    /// The ids of punc_norm(text), with whatever the model puts around them.
    func ids(_ text: String) throws -> [Int32]
}

extension BudgetedText {
    public typealias Chunk = TextChunk

    /// The bundle's `tokenizer.json`.
    public init(bundle: URL) throws {
        self.init(tokenizer: try Tokenizer(contentsOf: bundle.appendingPathComponent("tokenizer.json")))
    }

    /// `chunks`: whole when it fits `budget` ids (normalised as given), else the split (packed
    /// sentences, then clauses, words; never truncated), each piece normalised and tokenised
    /// on its own.
    public func chunks(_ text: String, budget: Int) throws -> [TextChunk] {
        if PythonText.strip(PythonText.scalars(text)).isEmpty { throw TextError(Self.emptyTextError) }
        let whole = try ids(text)
        if whole.count <= budget { return [TextChunk(text: Self.puncNorm(text), ids: whole)] }
        let pieces = try TextSplit.splitToFit(text, mergeSentences: true) { try ids($0).count <= budget }
        return try pieces.map { TextChunk(text: Self.puncNorm($0), ids: try ids($0)) }
    }
}
