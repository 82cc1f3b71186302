/// The WordLevel model (`models/wordlevel`): a piece is one vocabulary entry or the unk token.
/// Chatterbox's stand-in tokenizer is one (a character vocabulary behind a per-character split).
struct WordLevelModel {
    let vocab: Vocabulary
    let unknownToken: String

    init(_ model: ExactJSON, flaw: EngineFlaw) throws {
        guard let pairs = model["vocab"]?.pairs else { throw TokenizerError("tokenizer.json: WordLevel model has no vocab") }
        vocab = try Vocabulary(pairs, flaw: flaw)
        unknownToken = model["unk_token"]?.string ?? "<unk>"
    }

    func tokenize(_ piece: [UInt32], into out: inout [Int32]) throws {
        if let id = vocab.id(bytes: BPEModel.utf8(piece[...])) {
            out.append(id)
        } else if let unk = vocab.id(unknownToken) {
            out.append(unk)
        } else {
            throw TokenizerError("tokenizer: a piece is not in the WordLevel vocabulary and its unk token \(unknownToken) is missing")
        }
    }
}
