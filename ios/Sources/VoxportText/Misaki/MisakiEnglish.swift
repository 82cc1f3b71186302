import Foundation

/// misaki 0.9.4's English `G2P.__call__(text)` end to end: `preprocess`, spaCy's tokenizer and
/// tagger on the preprocessed text (`self.nlp(text)`), then `MisakiG2P`'s stages. Where misaki
/// calls espeak-ng for a word nothing else reads, this calls the caller's `fallback`.
public struct MisakiEnglish: Sendable {
    public let tokenizer: SpacyTokenizer
    public let tagger: PartOfSpeechTagger
    public let g2p: MisakiG2P

    /// The subfolders `init(folder:)` reads, as the writers lay them out.
    public static let tokenizerFolder = "tokenizer", taggerFolder = "tagger", lexiconFolder = "lexicon"

    public init(tokenizer: SpacyTokenizer, tagger: PartOfSpeechTagger, lexicon: MisakiLexicon, unk: String = "") {
        self.tokenizer = tokenizer
        self.tagger = tagger
        self.g2p = MisakiG2P(lexicon: lexicon, unk: unk)
    }

    /// One folder holding `tokenizer/` (write_tokenizer), `tagger/` (write_tagger) and
    /// `lexicon/` (write_lexicon): a Kokoro bundle's `g2p/` (`conversion.kokoro.g2p_files`).
    public init(folder: URL, unk: String = "") throws {
        let writers = [
            (Self.tokenizerFolder, "conversion.kokoro.tokenizer.write_tokenizer"),
            (Self.taggerFolder, "conversion.kokoro.tagger.write_tagger"),
            (Self.lexiconFolder, "conversion.kokoro.lexicon.write_lexicon"),
        ]
        // A Kokoro bundle exported before it carried g2p/ is the likely cause.
        let bundleFix = "(a Kokoro bundle's g2p/: re-export the bundle with `voxport export kokoro --overwrite`)"
        for (name, writer) in writers {
            var isFolder: ObjCBool = false
            let path = folder.appendingPathComponent(name).path
            if !FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) || !isFolder.boolValue {
                throw MisakiG2P.Failure(description: "no folder \(path): write it with \(writer) \(bundleFix)")
            }
        }
        self.init(
            tokenizer: try SpacyTokenizer(folder: folder.appendingPathComponent(Self.tokenizerFolder)),
            tagger: try PartOfSpeechTagger(folder: folder.appendingPathComponent(Self.taggerFolder)),
            lexicon: try MisakiLexicon(folder: folder.appendingPathComponent(Self.lexiconFolder)), unk: unk)
    }

    /// `self.nlp(text)` on misaki's pipeline (tokenizer, tok2vec, tagger): the tokens with their
    /// tags. spaCy's tok2vec and tagger run over the whole Doc as one sequence (misaki enables
    /// no sentence splitter, and the CNN's window crosses sentence ends), so the tagger gets
    /// every token of the text at once.
    public func spacy(_ text: String) -> [MisakiG2P.SpacyToken] {
        let tokens = tokenizer.tokenize(text)
        let tags = tagger.tag(tokens.map { TaggerToken($0.text, spaceAfter: !$0.whitespace.isEmpty, norm: $0.norm) })
        return zip(tokens, tags).map { MisakiG2P.SpacyToken(text: $0.text, tag: $1, whitespace: $0.whitespace) }
    }

    /// `G2P.__call__(text)`: the phoneme string and misaki's tokens.
    public func phonemize(_ text: String, fallback: MisakiG2P.Fallback?) throws -> (phonemes: String, tokens: [MisakiG2PToken]) {
        try g2p(text, spacy: spacy(MisakiG2P.preprocessedText(text)), fallback: fallback)
    }
}
