import VoxportCore
import VoxportText

/// `prompt.split_text`: the pieces of a text whose prompt plus frame budget each fit the
/// model's KV rows, sentences kept apart (sentences, then clauses, words), each with the ids
/// of its TEXT segment.
enum Audio8TextPieces {
    struct Piece: Sendable, Equatable {
        /// The piece as split (whitespace collapsed).
        let text: String
        let ids: [Int32]
    }

    static func split(_ text: String, front: Audio8Text, voice: Audio8Voice?, tables: Audio8Tables, maxFrames: Int) throws -> [Piece] {
        if Audio8Text.cleanText(text).isEmpty { throw TextError(Audio8Text.emptyTextError) }
        // The TEXT segment is encoded on its own, so a prompt's length is a fixed part plus
        // the piece's ids (Python measures the fixed part on "x" the same way).
        let fixed = try Audio8Prompt.build(textIDs: [0], voice: voice, tables: tables).columns - 1
        func length(_ piece: String) throws -> Int {
            fixed + (try front.tokenizer.encode(Audio8Text.cleanText(piece), addSpecialTokens: false)).count
        }
        func fits(_ piece: String) throws -> Bool { try length(piece) + maxFrames <= tables.frame.maxSeqLen }
        let pieces = try TextSplit.splitToFit(text, mergeSentences: false, fits: fits)
        for piece in pieces where try !fits(piece) {
            // Not even one character fits (a long reference clip): Python's budget error.
            try Audio8Prompt.checkBudget(columns: try length(piece), maxFrames: maxFrames, tables: tables)
        }
        return try pieces.map { Piece(text: $0, ids: try front.textIDs($0)) }
    }
}
