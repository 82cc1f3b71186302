import Foundation

/// misaki 0.9.4's English `G2P.__call__` (American, version None) around its spaCy tokenizer and
/// tagger and its lexicon: `preprocess` (`[word](feature)` links), `tokenize` (spaCy's tokens
/// with the link features aligned onto them), `fold_left`, `retokenize`, then right to left over
/// words and sub-token groups with the next-sound context, `resolve_tokens`, and the final join
/// with "ɾ"→"T", "ʔ"→"t".
///
/// spaCy's tokens and tags come from the caller (`SpacyToken`); where misaki would call its
/// out-of-vocabulary fallback (espeak-ng) this calls `fallback` and takes its answer.
public struct MisakiG2P: Sendable {
    typealias Scalars = [UInt32]
    typealias T = PythonText

    /// One token of `self.nlp(text)`: `tk.text`, `tk.tag_`, `tk.whitespace_`.
    public struct SpacyToken: Sendable, Equatable {
        public var text: String
        public var tag: String
        public var whitespace: String
        public init(text: String, tag: String, whitespace: String) {
            self.text = text
            self.tag = tag
            self.whitespace = whitespace
        }
    }

    /// misaki's fallback: the (merged) token it cannot read to `(phonemes, rating)`.
    public typealias Fallback = (MisakiG2PToken) throws -> (phonemes: String?, rating: Int?)

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let lexicon: MisakiLexicon
    /// Stands for a word nothing could read (Kokoro's pipeline: "").
    public let unk: String

    public init(lexicon: MisakiLexicon, unk: String = "") {
        self.lexicon = lexicon
        self.unk = unk
    }

    /// `preprocess(text)`'s text: what spaCy must tokenize and tag for `callAsFunction`.
    public static func preprocessedText(_ text: String) -> String {
        T.string(MisakiPreprocess.run(T.scalars(text)).text)
    }

    /// `G2P.__call__(text)`: the phoneme string and the tokens. `spacy` is spaCy's reading of
    /// `preprocessedText(text)`.
    public func callAsFunction(_ text: String, spacy: [SpacyToken], fallback: Fallback?) throws -> (
        phonemes: String, tokens: [MisakiG2PToken]
    ) {
        let pre = MisakiPreprocess.run(T.scalars(text))
        let tokens = try foldLeft(Self.tokenize(pre, spacy))
        var words = try MisakiRetokenize.words(tokens)
        var ctx = MisakiTokenContext()
        for i in words.indices.reversed() {
            switch words[i] {
            case .single(var w):
                if w.phonemes == nil {
                    (w.phonemes, w.ratingAttribute) = try read(w, ctx)
                }
                if w.phonemes == nil, let fallback {
                    (w.phonemes, w.ratingAttribute) = try ask(fallback, w)
                }
                ctx = Self.tokenContext(ctx, w.phonemes, w)
                words[i] = .single(w)
            case .group(var w):
                ctx = try readGroup(&w, ctx, fallback)
                words[i] = .group(w)
            }
        }
        var out: [MToken] = words.map {
            switch $0 {
            case .single(let tk): tk
            case .group(let g): MToken.merge(g[...], unk: T.scalars(unk))
            }
        }
        var result: Scalars = []
        for k in out.indices {
            if let ps = out[k].phonemes, !ps.isEmpty {
                out[k].phonemes = ps.map { $0 == 0x27E ? 0x54 : ($0 == 0x294 ? 0x74 : $0) }  // ɾ→T, ʔ→t
            }
            result += (out[k].phonemes ?? T.scalars(unk)) + out[k].whitespace
        }
        return (T.string(result), out.map(\.output))
    }

    /// `self.lexicon(tk, ctx)`; misaki's number reader raising ends the call, as in Python.
    func read(_ tk: MToken, _ ctx: MisakiTokenContext) throws -> (Scalars?, Int?) {
        switch lexicon(tk.lexiconToken, ctx) {
        case .word(let ps, let rating): return (ps.map(T.scalars), rating)
        case .number: throw Failure(description: "misaki's number reader raises on \(T.string(tk.text).debugDescription)")
        }
    }

    func ask(_ fallback: Fallback, _ tk: MToken) throws -> (Scalars?, Int?) {
        let (ps, rating) = try fallback(tk.output)
        return (ps.map(T.scalars), rating)
    }

    /// The loop's branch for a group of sub-tokens: the longest readable span ending at `right`,
    /// tried from the left; a piece nothing reads sends the whole group to the fallback.
    func readGroup(_ w: inout [MToken], _ ctx0: MisakiTokenContext, _ fallback: Fallback?) throws -> MisakiTokenContext {
        var ctx = ctx0
        var left = 0, right = w.count
        var shouldFallback = false
        while left < right {
            let span = w[left..<right]
            var ps: Scalars? = nil, rating: Int? = nil
            var merged: MToken? = nil
            if !span.contains(where: { $0.alias != nil || $0.phonemes != nil }) {
                merged = MToken.merge(span, unk: nil)
                (ps, rating) = try read(merged!, ctx)
            }
            if let ps, let merged {
                w[left].phonemes = ps
                w[left].rating = rating
                for x in (left + 1)..<right {
                    w[x].phonemes = []
                    w[x].ratingAttribute = rating
                }
                ctx = Self.tokenContext(ctx, ps, merged)
                right = left
                left = 0
            } else if left + 1 < right {
                left += 1
            } else {
                right -= 1
                if w[right].phonemes == nil {
                    if w[right].text.allSatisfy(Self.subtokenJunks.contains) {
                        w[right].phonemes = []
                        w[right].rating = 3
                    } else if fallback != nil {
                        shouldFallback = true
                        break
                    }
                }
                left = 0
            }
        }
        if shouldFallback, let fallback {
            let (ps, rating) = try ask(fallback, MToken.merge(w[...], unk: nil))
            w[0].phonemes = ps
            w[0].rating = rating
            for j in 1..<w.count {
                w[j].phonemes = []
                w[j].rating = rating
            }
        } else {
            Self.resolveTokens(&w)
        }
        return ctx
    }

    // MARK: tokenize and fold_left

    /// `tokenize`: spaCy's tokens as MTokens, each link feature set on the tokens spaCy's
    /// alignment maps to its word. misaki indexes the tokens by position in the flattened
    /// `y2x.data` (equal to the token index only where every token maps to one word); kept.
    static func tokenize(_ pre: MisakiPreprocess.Result, _ spacy: [SpacyToken]) throws -> [MToken] {
        var tokens = spacy.map {
            MToken(text: T.scalars($0.text), tag: $0.tag, whitespace: T.scalars($0.whitespace), phonemes: nil)
        }
        if pre.features.isEmpty { return tokens }
        let data: [Int]
        do {
            data = try MisakiAlignment.y2xData(pre.words, tokens.map(\.text))
        } catch {
            throw Failure(description: "spaCy's tokens do not spell the preprocessed text: tokenize preprocessedText(text)")
        }
        for (k, v) in pre.features {
            for (i, j) in data.indices.filter({ data[$0] == k }).enumerated() where j < tokens.count {
                switch v {
                case .stress(let s):
                    tokens[j].stress = s
                case .phonemes(let p):
                    tokens[j].isHead = i == 0
                    tokens[j].phonemes = i == 0 ? Array(p.drop(while: { $0 == 0x2F })) : []
                    tokens[j].rating = 5
                case .numFlags(let f):
                    tokens[j].numFlags = Array(f.drop(while: { $0 == 0x23 }))
                }
            }
        }
        return tokens
    }

    /// `fold_left`: a token that is not a head joins the one before it.
    func foldLeft(_ tokens: [MToken]) -> [MToken] {
        var result: [MToken] = []
        for tk in tokens {
            if !result.isEmpty && !tk.isHead {
                let last = result.removeLast()
                result.append(MToken.merge([last, tk][...], unk: T.scalars(unk)))
            } else {
                result.append(tk)
            }
        }
        return result
    }

    // MARK: token_context and resolve_tokens

    static let consonants = Set(T.scalars("bdfhjklmnpstvwzðŋɡɹɾʃʒʤʧθ"))
    /// NON_QUOTE_PUNCTS: PUNCTS less the double quotes.
    static let nonQuotePuncts = Set(T.scalars(";:,.!?—…"))
    static let subtokenJunks = Set(T.scalars("',-._‘’/"))
    static let diphthongs = Set(T.scalars("AIOQWYʤʧ"))

    /// `token_context(ctx, ps, token)`: the first vowel, consonant or (non-quote) punctuation
    /// of `ps` says whether a vowel comes next; "to" is remembered for the word before.
    static func tokenContext(_ ctx: MisakiTokenContext, _ ps: Scalars?, _ token: MToken) -> MisakiTokenContext {
        var vowel = ctx.futureVowel
        if let ps, !ps.isEmpty,
            let c = ps.first(where: { MisakiStress.vowels.contains($0) || consonants.contains($0) || nonQuotePuncts.contains($0) })
        {
            vowel = nonQuotePuncts.contains(c) ? nil : MisakiStress.vowels.contains(c)
        }
        let text = token.text
        let futureTo = text == T.scalars("to") || text == T.scalars("To") || (text == T.scalars("TO") && (token.tag == "TO" || token.tag == "IN"))
        return MisakiTokenContext(futureVowel: vowel, futureTo: futureTo)
    }

    static func stressWeight(_ ps: Scalars) -> Int { ps.reduce(0) { $0 + (diphthongs.contains($1) ? 2 : 1) } }

    /// `resolve_tokens`: leftover punctuation and junk pieces, spacing between pieces of mixed
    /// kinds, and the lesser half of several stressed pieces demoted to secondary stress.
    static func resolveTokens(_ tokens: inout [MToken]) {
        var text: Scalars = []
        for tk in tokens.dropLast() { text += tk.text + tk.whitespace }
        text += tokens.last!.text
        var kinds = Set<Int>()
        for c in text where !subtokenJunks.contains(c) {
            kinds.insert(T.isAlpha(c) ? 0 : (MisakiPreprocess.isDigit([c][...]) ? 1 : 2))
        }
        let prespace = text.contains(0x20) || text.contains(0x2F) || kinds.count > 1
        for i in tokens.indices {
            if tokens[i].phonemes == nil {
                if i == tokens.count - 1 && tokens[i].text.count == 1 && nonQuotePuncts.contains(tokens[i].text[0]) {
                    tokens[i].phonemes = tokens[i].text
                    tokens[i].rating = 3
                } else if tokens[i].text.allSatisfy(subtokenJunks.contains) {
                    tokens[i].phonemes = []
                    tokens[i].rating = 3
                }
            } else if i > 0 {
                tokens[i].prespace = prespace
            }
        }
        if prespace { return }
        var indices: [(primary: Bool, weight: Int, i: Int)] = tokens.indices.compactMap { i in
            guard let ps = tokens[i].phonemes, !ps.isEmpty else { return nil }
            return (ps.contains(MisakiStress.primary), stressWeight(ps), i)
        }
        if indices.count == 2 && tokens[indices[0].i].text.count == 1 {
            let i = indices[1].i
            tokens[i].phonemes = MisakiStress.apply(tokens[i].phonemes!, -0.5)
            return
        } else if indices.count < 2 || indices.filter(\.primary).count <= (indices.count + 1) / 2 {
            return
        }
        indices.sort { ($0.primary ? 1 : 0, $0.weight, $0.i) < ($1.primary ? 1 : 0, $1.weight, $1.i) }
        for (_, _, i) in indices.prefix(indices.count / 2) {
            tokens[i].phonemes = MisakiStress.apply(tokens[i].phonemes!, -0.5)
        }
    }
}
