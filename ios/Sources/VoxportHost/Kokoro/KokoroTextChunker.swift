import Foundation
import VoxportCore
import VoxportText

/// What misaki asks for a word nothing else reads (espeak-ng in the publisher's pipeline):
/// `MisakiG2P.Fallback`, Sendable so a Speaker can hold it. nil everywhere: misaki's `unk=""`,
/// the word is skipped and named in a warning.
public typealias KokoroFallback = @Sendable (MisakiG2PToken) throws -> (phonemes: String?, rating: Int?)

/// Which fallback a Kokoro bundle's text path asks for a word in no lexicon.
public enum KokoroFallbackChoice: Sendable {
    /// The bundle's letter rules, `g2p/fallback/` (`MisakiLetterRules`): the default, so that
    /// Swift's text path equals `voxport phonemize|speak kokoro --fallback rules`.
    case bundleRules
    /// None: misaki's `unk=""`, the word skipped and named in a warning.
    case skip
    /// Another (a test replaying espeak-ng's answers, as `--fallback espeak` gives them).
    case custom(KokoroFallback)

    /// The fallback itself, read from `bundle` for `.bundleRules`.
    public func resolve(_ bundle: URL) throws -> KokoroFallback? {
        switch self {
        case .bundleRules:
            let rules = try KokoroBundleFiles.letterRules(bundle)
            return { rules($0) }
        case .skip: return nil
        case .custom(let fallback): return fallback
        }
    }
}

/// Text to Kokoro's chunks, `conversion/kokoro/text/chunks.py`'s `text_to_chunks` rule for rule
/// over `MisakiEnglish`'s tokens: paragraphs (`KokoroParagraphs`), misaki per paragraph, one
/// chunk per sentence (after `. ! ? …`, closers kept), a sentence too long split at clauses
/// (after `, ; : —`) packed greedily, then words, then one word cut by symbol; "fits" is the
/// chunk's phonemes plus the two pads within `maxIDs`. Chunks with nothing to say are left out;
/// none left is Python's `NothingToSayError`, worded the same. A number of more than
/// `maxNumberDigits` digits is refused before the G2P as `conversion/kokoro/cli.py`'s
/// `text_to_chunks` refuses it, and a G2P failure is a user error, as Python's CLI says it.
///
/// `load(bundle)` reads words in no lexicon with the bundle's letter rules (`g2p/fallback/`):
/// its chunks are `voxport phonemize kokoro TEXT --fallback rules`'s.
public struct KokoroTextChunker: Sendable {
    static let sentenceEnds = Set(".!?…".unicodeScalars)
    static let clauseEnds = Set(",;:—".unicodeScalars)
    static let closers = Set(")”»'’".unicodeScalars)

    public let english: MisakiEnglish
    public let fallback: KokoroFallback?
    public let vocab: KokoroVocab
    public let maxIDs: Int

    public init(english: MisakiEnglish, fallback: KokoroFallback?, vocab: KokoroVocab, maxIDs: Int = KokoroPipeline.maxIDs) throws {
        guard maxIDs >= 3 else {
            throw VoxportError(.user, "max_ids must leave room for a phoneme between the pads: \(maxIDs)")
        }
        self.english = english
        self.fallback = fallback
        self.vocab = vocab
        self.maxIDs = maxIDs
    }

    /// A Kokoro bundle's chunker: misaki over its `g2p/` folder, words in no lexicon read by
    /// `fallback` (default: the bundle's letter rules, as `--fallback rules`), its `vocab.json`,
    /// at `maxIDs` (default: what `voxport phonemize kokoro` uses).
    public static func load(
        _ bundle: ModelBundle, fallback: KokoroFallbackChoice = .bundleRules, maxIDs: Int = KokoroPipeline.maxIDs
    ) throws -> KokoroTextChunker {
        let english = try loadEnglish(bundle.url)
        let vocab = try KokoroVocab.load(try bundle.fileURL(KokoroVocab.fileName))
        return try KokoroTextChunker(english: english, fallback: try fallback.resolve(bundle.url), vocab: vocab, maxIDs: maxIDs)
    }

    /// misaki over `bundle/g2p/`; a bundle exported before it had one is told how to get one.
    public static func loadEnglish(_ bundle: URL) throws -> MisakiEnglish {
        let g2p = bundle.appendingPathComponent(KokoroSpeaker.g2pFolder)
        guard FileManager.default.fileExists(atPath: g2p.path) else { throw missingG2P(bundle) }
        return try MisakiEnglish(folder: g2p)
    }

    /// The one line a bundle without `g2p/` gets when asked to read text.
    public static func missingG2P(_ bundle: URL) -> VoxportError {
        VoxportError(
            .user, "\(bundle.path) has no \(KokoroSpeaker.g2pFolder)/ folder (Kokoro's G2P data, to read text): re-export it "
                + "with `voxport export kokoro --overwrite`, or speak phonemes")
    }

    /// The same chunker with another id limit (a chunk split again when its frames overflow).
    public func limited(to maxIDs: Int) throws -> KokoroTextChunker {
        try KokoroTextChunker(english: english, fallback: fallback, vocab: vocab, maxIDs: maxIDs)
    }

    /// The chunks of `text` and the warnings Python raises on the way, in its order: per
    /// paragraph the unpronounced words, then per chunk the symbols its ids drop.
    public func chunks(_ text: String) throws -> (chunks: [KokoroChunk], warnings: [String]) {
        try Self.checkNumbers(text)
        let paras = KokoroParagraphs.split(text)
        guard !paras.isEmpty else {
            throw VoxportError(.user, "nothing to say: the text is empty; give some words to speak")
        }
        let budget = maxIDs - 2
        var chunks: [KokoroChunk] = []
        var warnings: [String] = []
        for para in paras {
            let read: (phonemes: String, tokens: [MisakiG2PToken])
            do {
                read = try english.phonemize(para, fallback: fallback)
            } catch let e as MisakiG2P.Failure {
                throw Self.unreadable(e)
            }
            let tokens = read.tokens.map {
                KokoroWordToken(text: $0.text, phonemes: $0.phonemes, whitespace: $0.whitespace)
            }
            if let w = Self.unpronounced(tokens) { warnings.append(w) }
            for sentence in Self.splitAfter(tokens, Self.sentenceEnds) {
                for piece in Self.pack([sentence], budget, 0) {
                    let (ids, dropped) = vocab.encode(piece.phonemes)
                    if let dropped { warnings.append(dropped) }
                    if vocab.hasSpeech(ids) {
                        chunks.append(KokoroChunk(phonemes: piece.phonemes, ids: ids, text: piece.text, tokens: piece.tokens))
                    }
                }
            }
        }
        guard !chunks.isEmpty else {
            var shown = Array(KokoroParagraphs.strip(text).unicodeScalars)
            if shown.count > 60 { shown = Array(shown[..<57]) + Array("...".unicodeScalars) }
            throw VoxportError(
                .user, "nothing to say: \(PythonRepr.string(String(String.UnicodeScalarView(shown)))) has no pronounceable word; "
                    + "give words, not only punctuation or symbols")
        }
        return (chunks, warnings)
    }

    /// `cli.py`'s `MAX_NUMBER_DIGITS`: longer numbers make num2words overflow (or crawl).
    public static let maxNumberDigits = 300

    /// `cli.py`'s `text_to_chunks` check: each run `_NUMBER` matches (a decimal digit, then
    /// digits, commas and zero-width characters, ending on a digit) holds at most
    /// `maxNumberDigits` digits; else its message, with the run's first character as Python
    /// counts it (code points).
    public static func checkNumbers(_ text: String) throws {
        func isDigit(_ c: Unicode.Scalar) -> Bool { c.properties.generalCategory == .decimalNumber }
        func joins(_ c: Unicode.Scalar) -> Bool {
            isDigit(c) || c == "," || (0x200B...0x200D).contains(c.value) || c.value == 0x2060 || c.value == 0xFEFF
        }
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            guard isDigit(scalars[i]) else {
                i += 1
                continue
            }
            var last = i, k = i, digits = 0
            while k < scalars.count, joins(scalars[k]) {
                if isDigit(scalars[k]) {
                    last = k
                    digits += 1
                }
                k += 1
            }
            if digits > maxNumberDigits {
                throw VoxportError(
                    .user, "TEXT has a number of \(digits) digits at character \(i): the G2P reads numbers of up to "
                        + "\(maxNumberDigits) digits; write it in words, or split it into groups")
            }
            i = last + 1
        }
    }

    /// A `MisakiG2P.Failure` (misaki raising on the text: a number num2words cannot say) as the
    /// user error Python's CLI makes of its `OverflowError`.
    static func unreadable(_ failure: MisakiG2P.Failure) -> VoxportError {
        let said = failure.description.unicodeScalars
        let shown = said.count > 60 ? String(String.UnicodeScalarView(said.prefix(60))) + "…" : failure.description
        return VoxportError(.user, "TEXT has something the G2P cannot read (\(shown)): write it in words")
    }

    /// `_warn_unpronounced`'s message, nil when every word with text has phonemes.
    static func unpronounced(_ tokens: [KokoroWordToken]) -> String? {
        let missing = tokens.filter { $0.phonemes == nil && !KokoroParagraphs.strip($0.text).isEmpty }
        guard !missing.isEmpty else { return nil }
        return "no pronunciation for \(missing.map { PythonRepr.string($0.text) }.joined(separator: ", ")); skipped (check the "
            + "spelling, or write the word as it sounds)"
    }

    /// `tokens_phonemes`: each token's phonemes, a space where the text had whitespace, stripped.
    static func phonemes(_ tokens: [KokoroWordToken]) -> String {
        KokoroParagraphs.strip(tokens.map { ($0.phonemes ?? "") + ($0.whitespace.isEmpty ? "" : " ") }.joined())
    }

    /// `tokens_text`.
    static func text(_ tokens: [KokoroWordToken]) -> String {
        KokoroParagraphs.strip(tokens.map { $0.text + $0.whitespace }.joined())
    }

    static func madeOf(_ t: KokoroWordToken, _ set: Set<Unicode.Scalar>) -> Bool {
        let p = KokoroParagraphs.strip(t.phonemes ?? "").unicodeScalars
        return !p.isEmpty && p.allSatisfy { set.contains($0) }
    }

    /// `split_after`: groups closed after a run of end marks and the closing marks after them.
    static func splitAfter(_ tokens: [KokoroWordToken], _ ends: Set<Unicode.Scalar>) -> [[KokoroWordToken]] {
        var groups: [[KokoroWordToken]] = []
        var current: [KokoroWordToken] = []
        var inTail = false  // the group has reached its end marks; only closers may follow
        for (i, t) in tokens.enumerated() {
            current.append(t)
            if madeOf(t, ends) {
                inTail = true
            } else if !(inTail && madeOf(t, closers)) {
                inTail = false
            }
            let next = i + 1 < tokens.count ? tokens[i + 1] : nil
            if inTail, next.map({ !(madeOf($0, ends) || madeOf($0, closers)) }) ?? true {
                groups.append(current)
                current = []
                inTail = false
            }
        }
        if !current.isEmpty { groups.append(current) }
        return groups
    }

    struct Piece {
        let text: String
        let phonemes: String
        let tokens: [KokoroWordToken]

        init(_ tokens: [KokoroWordToken]) {
            self.init(text: KokoroTextChunker.text(tokens), phonemes: KokoroTextChunker.phonemes(tokens), tokens: tokens)
        }

        init(text: String, phonemes: String, tokens: [KokoroWordToken]) {
            self.text = text
            self.phonemes = phonemes
            self.tokens = tokens
        }
    }

    /// `_fits`: Python's `len`, code points.
    static func fits(_ tokens: [KokoroWordToken], _ budget: Int) -> Bool { phonemes(tokens).unicodeScalars.count <= budget }

    /// `_pack`: consecutive groups packed greedily under `budget`.
    static func pack(_ groups: [[KokoroWordToken]], _ budget: Int, _ level: Int) -> [Piece] {
        var pieces: [Piece] = []
        var current: [KokoroWordToken] = []
        for group in groups {
            if fits(current + group, budget) {
                current += group
                continue
            }
            if !current.isEmpty { pieces.append(Piece(current)) }
            current = []
            if fits(group, budget) {
                current = group
            } else {
                pieces += splitLong(group, budget, level)
            }
        }
        if !current.isEmpty { pieces.append(Piece(current)) }
        return pieces
    }

    /// `_split_long`: clauses, then words; one token longer than an utterance has its phonemes
    /// cut every `budget` symbols (the text repeats, and no token is kept: these are not timed).
    static func splitLong(_ group: [KokoroWordToken], _ budget: Int, _ level: Int) -> [Piece] {
        if level < 2 {
            let finer = level == 0 ? splitAfter(group, clauseEnds) : group.map { [$0] }
            if finer.count > 1 { return pack(finer, budget, level + 1) }
            return splitLong(group, budget, level + 1)
        }
        let text = text(group), ps = Array(phonemes(group).unicodeScalars)
        return stride(from: 0, to: ps.count, by: budget).map {
            let cut = String(String.UnicodeScalarView(ps[$0..<min($0 + budget, ps.count)]))
            return Piece(text: text, phonemes: KokoroParagraphs.strip(cut), tokens: [])
        }
    }
}
