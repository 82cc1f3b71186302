import Foundation

/// A Hugging Face `tokenizer.json`, read as the file is (the bundle's own file) and run step for
/// step as `tokenizers` runs `encode`: added tokens split out first (leftmost longest; raw
/// ones on the text, normalized ones after the normalizer), the normalizer, the pre-tokenizer
/// over Unicode scalars, the model (BPE by merge rank over id pairs, or WordLevel), then the
/// post-processor's template. A component this module does not run exactly is refused when the
/// file is read, naming it.
public struct Tokenizer: Sendable {
    enum Model {
        case bpe(BPEModel)
        case wordLevel(WordLevelModel)
    }
    enum TemplateItem {
        case sequence
        case special([Int32])
    }

    let model: Model
    let added: AddedTokens
    let normalizer: Normalizer?
    let preTokenizer: PreTokenizer?
    /// TemplateProcessing's `single` (nil: the post-processor adds nothing).
    let template: [TemplateItem]?
    let flaw: EngineFlaw

    public init(contentsOf url: URL) throws {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw TokenizerError("cannot read \(url.path): \(error.localizedDescription)")
        }
        try self.init(json: try ExactJSON.parse([UInt8](data)))
    }

    public init(json: ExactJSON) throws { try self.init(json: json, flaw: .none) }

    init(json: ExactJSON, flaw: EngineFlaw) throws {
        self.flaw = flaw
        for key in ["truncation", "padding"] where !(json[key]?.isNull ?? true) {
            throw TokenizerError("tokenizer.json: \(key) is set; only null is supported")
        }
        guard let modelJSON = json["model"] else { throw TokenizerError("tokenizer.json: no model") }
        let vocabulary: Vocabulary
        switch modelJSON["type"]?.string ?? (modelJSON["merges"] != nil ? "BPE" : nil) {
        case "BPE":
            let bpe = try BPEModel(modelJSON, flaw: flaw)
            model = .bpe(bpe)
            vocabulary = bpe.vocab
        case "WordLevel":
            let wordLevel = try WordLevelModel(modelJSON, flaw: flaw)
            model = .wordLevel(wordLevel)
            vocabulary = wordLevel.vocab
        case let other:
            throw TokenizerError("tokenizer.json: model \(other ?? "?") is not supported")
        }
        added = try AddedTokens(json["added_tokens"]?.array ?? [], vocabularyCount: vocabulary.count) { vocabulary.id($0) }
        normalizer = try Normalizer(json["normalizer"])
        preTokenizer = try PreTokenizer(json["pre_tokenizer"])
        template = try Self.template(json["post_processor"], added: added, vocabulary: vocabulary)
    }

    private static func template(_ json: ExactJSON?, added: AddedTokens, vocabulary: Vocabulary) throws -> [TemplateItem]? {
        guard let json, !json.isNull else { return nil }
        switch json["type"]?.string {
        case "ByteLevel": return nil  // offsets only
        case "TemplateProcessing":
            let specials = json["special_tokens"]?.pairs ?? []
            return try (json["single"]?.array ?? []).map { item in
                if let name = item["SpecialToken"]?["id"]?.string {
                    guard let entry = specials.first(where: { $0.key == name })?.value,
                        let ids = entry["ids"]?.array?.compactMap(\.int)
                    else { throw TokenizerError("tokenizer.json: template token \(name) has no ids") }
                    return .special(ids.map { Int32($0) })
                }
                guard item["Sequence"]?["id"]?.string == "A" else {
                    throw TokenizerError("tokenizer.json: a single-sequence template reads sequence A only")
                }
                return .sequence
            }
        case let other:
            throw TokenizerError("tokenizer.json: post-processor \(other ?? "?") is not supported")
        }
    }

    /// The id of an added token or vocabulary entry (`token_to_id`).
    public func id(of token: String) -> Int32? {
        if let id = added.id(token) { return id }
        switch model {
        case .bpe(let m): return m.vocab.id(token)
        case .wordLevel(let m): return m.vocab.id(token)
        }
    }

    /// `Tokenizer.encode(text, add_special_tokens=...).ids`.
    public func encode(_ text: String, addSpecialTokens: Bool = true) throws -> [Int32] {
        let scalars = text.unicodeScalars.map(\.value)
        var body: [Int32] = []
        body.reserveCapacity(scalars.count)
        for piece in added.rawTrie.split(scalars[...], flaw: flaw) {
            switch piece {
            case .token(let id): body.append(id)
            case .text(let raw):
                let text = normalizer?.apply(raw, flaw: flaw) ?? raw
                for inner in added.normalizedTrie.split(text[...], flaw: flaw) {
                    switch inner {
                    case .token(let id): body.append(id)
                    case .text(let plain): try tokenize(plain, into: &body)
                    }
                }
            }
        }
        guard addSpecialTokens, let template else { return body }
        var out: [Int32] = []
        for item in template {
            switch item {
            case .sequence: out += body
            case .special(let ids): out += ids
            }
        }
        return out
    }

    private func tokenize(_ text: [UInt32], into out: inout [Int32]) throws {
        let pieces = preTokenizer?.apply([text], flaw: flaw) ?? [text]
        for piece in pieces where !piece.isEmpty {
            switch model {
            case .bpe(let m): m.tokenize(piece, into: &out)
            case .wordLevel(let m): try m.tokenize(piece, into: &out)
            }
        }
    }
}
