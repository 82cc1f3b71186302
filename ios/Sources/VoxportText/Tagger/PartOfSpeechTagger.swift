import Foundation

/// misaki's part-of-speech tagger: spaCy `en_core_web_sm`'s tok2vec + tagger (what misaki
/// 0.9.4 enables), from the folder `conversion.kokoro.tagger.write_tagger` writes. Tokens in,
/// Penn Treebank tags out (`token.tag_`); tokenisation is the caller's (spaCy's tokenizer).
public struct PartOfSpeechTagger: Sendable {
    let weights: TaggerWeights
    let features: LexemeFeatures

    /// The tag set, in the order of the scores.
    public var labels: [String] { weights.labels }

    public init(folder: URL) throws {
        weights = try TaggerWeights(folder: folder)
        features = LexemeFeatures(attributes: weights.tables.map(\.attribute), strings: weights.strings, normTables: weights.normTables)
    }

    /// One sentence (a spaCy Doc's tokens): one tag per token.
    public func tag(_ tokens: [TaggerToken]) -> [String] {
        let s = scores(tokens)
        let L = labels.count
        return tokens.indices.map { t in
            var best = 0
            for l in 1..<L where s[t * L + l] > s[t * L + best] { best = l }
            return labels[best]
        }
    }

    /// The tagger's scores, tokens x labels (row-major); argmax is the tag.
    public func scores(_ tokens: [TaggerToken]) -> [Float] {
        guard !tokens.isEmpty else { return [] }
        return weights.scores(weights.encode(weights.embed(tokens.map(features.ids))))
    }
}
