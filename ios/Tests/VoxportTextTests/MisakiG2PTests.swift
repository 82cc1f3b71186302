import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The Swift port of misaki's `G2P.__call__` stages around the tokenizer, tagger and lexicon
/// against misaki itself: `conversion/kokoro/lexicon/g2p_case.py` (a Python child) runs Kokoro's
/// G2P (`english_g2p()`) over the lexicon corpus and records, per sentence, spaCy's tokens and
/// tags, every fallback (espeak-ng) call with its answer, and misaki's phoneme string and tokens.
/// The Swift G2P gets spaCy's tokens and the recorded fallback answers; nothing expected comes
/// from the Swift side. A debug run checks every held-out sentence, every third development one
/// and g2p_case.py's extra sentences (Python runs only those: `--subset`); VP_MISAKI_G2P_ALL=1
/// checks all.
final class MisakiG2PTests: XCTestCase {
    struct Sentence {
        let set: String
        let index: Int
        let text: String
        let spacy: [MisakiG2P.SpacyToken]
        let fallbacks: [MisakiRecording.Answer]
        let phonemes: String
        let tokens: [ExactJSON]
    }

    static let all = ProcessInfo.processInfo.environment["VP_MISAKI_G2P_ALL"] == "1"
    nonisolated(unsafe) static var cached: ([Sentence], MisakiLexicon, URL)?

    /// The recorded sentences, the lexicon on the case's folder (~5 s in debug) and the folder, once.
    static func load() throws -> ([Sentence], MisakiLexicon, URL) {
        if let c = cached { return c }
        let out = try TestScratch.folder("misaki-g2p-case")
        try PythonChild.run(
            PythonChild.repo.appendingPathComponent("conversion/kokoro/lexicon/g2p_case.py"),
            all ? [out.path] : [out.path, "--subset"])
        let text = try Data(contentsOf: out.appendingPathComponent("cases.jsonl"))
        var sentences: [Sentence] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let row = try XCTUnwrap(ExactJSON.parse([UInt8](line)).array)
            XCTAssertEqual(row.count, 7)
            let spacy = try MisakiRecording.spacyTokens(row[3])
            let fallbacks = try MisakiRecording.answers(row[4])
            sentences.append(
                Sentence(
                    set: try XCTUnwrap(row[0].string), index: try XCTUnwrap(row[1].int), text: try XCTUnwrap(row[2].string),
                    spacy: spacy, fallbacks: fallbacks, phonemes: try XCTUnwrap(row[5].string),
                    tokens: try XCTUnwrap(row[6].array)))
        }
        cached = (sentences, try MisakiLexicon(folder: out.appendingPathComponent("lexicon")), out)
        return cached!
    }

    static func scalars(_ s: String?) -> [UInt32]? { s.map { $0.unicodeScalars.map(\.value) } }

    /// misaki's token row [text, tag, whitespace, phonemes, _.rating, rating attribute,
    /// start_ts, end_ts] against the Swift token, scalar by scalar.
    static func sameToken(_ row: ExactJSON, _ tk: MisakiG2PToken) -> Bool {
        guard let a = row.array, a.count == 8 else { return false }
        return scalars(a[0].string) == scalars(tk.text) && a[1].string == tk.tag
            && scalars(a[2].string) == scalars(tk.whitespace) && scalars(a[3].string) == scalars(tk.phonemes)
            && a[4].int == tk.rating && a[5].int == tk.ratingAttribute && a[6].isNull && tk.startTs == nil
            && a[7].isNull && tk.endTs == nil
    }

    /// Every checked sentence: the Swift phoneme string equals misaki's, and so does every
    /// returned token; the fallback is asked for exactly the words misaki asked it for.
    func testEverySentenceEqualsMisaki() throws {
        let (sentences, lexicon, _) = try Self.load()
        let g2p = MisakiG2P(lexicon: lexicon, unk: "")
        var strings: [String: (equal: Int, total: Int)] = [:]
        var tokensEqual = 0, checked = 0
        var misses: [String] = []
        let t0 = Date()
        for s in sentences {
            let fallback = ReplayedFallback(s.fallbacks)
            let got: (phonemes: String, tokens: [MisakiG2PToken])
            do {
                got = try g2p(s.text, spacy: s.spacy) { fallback($0) }
            } catch {
                got = ("<\(error)>", [])
            }
            let asked = fallback.asked
            checked += 1
            let stringOK = Self.scalars(got.phonemes) == Self.scalars(s.phonemes)
            let tokensOK = got.tokens.count == s.tokens.count && zip(s.tokens, got.tokens).allSatisfy(Self.sameToken)
            let askedOK = asked == s.fallbacks.map(\.text)
            strings[s.set, default: (0, 0)].total += 1
            if stringOK { strings[s.set, default: (0, 0)].equal += 1 }
            if tokensOK && askedOK { tokensEqual += 1 }
            if !(stringOK && tokensOK && askedOK), misses.count < 30 {
                misses.append(
                    "#\(s.index) \(s.text.debugDescription): swift \(got.phonemes.debugDescription) misaki \(s.phonemes.debugDescription)"
                        + (tokensOK ? "" : " (tokens differ)") + (askedOK ? "" : " (fallback asked \(asked), misaki \(s.fallbacks.map(\.text)))"))
            }
        }
        let elapsed = Date().timeIntervalSince(t0)
        let summary = strings.keys.sorted().map { "\($0) \(strings[$0]!.equal)/\(strings[$0]!.total)" }.joined(separator: ", ")
        print(
            "[misaki-g2p] phoneme strings equal: \(summary); tokens and fallback calls equal \(tokensEqual)/\(checked); "
                + "\(String(format: "%.2f", elapsed / Double(max(checked, 1)) * 1e3)) ms per sentence")
        for m in misses { print("[misaki-g2p] differs: \(m)") }
        XCTAssertGreaterThan(checked, Self.all ? 4_500 : 2_000)
        XCTAssertEqual(misses, [])
    }

    /// Two stages alone on g2p_case.py's pieces (every spaCy token text of the run and seeded
    /// random strings): the hand-matched SUBTOKEN_REGEX equals `regex.findall`, and
    /// `preprocess` (LINK_REGEX, `split`, the features) equals misaki's.
    func testSubtokenizeAndPreprocessEqualMisaki() throws {
        let folder = try Self.load().2
        let text = try Data(contentsOf: folder.appendingPathComponent("pieces.jsonl"))
        var counts: [String: (equal: Int, total: Int)] = [:]
        var misses: [String] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let row = try XCTUnwrap(ExactJSON.parse([UInt8](line)).array)
            let kind = try XCTUnwrap(row[0].string), input = try XCTUnwrap(Self.scalars(row[1].string))
            let ok: Bool
            if kind == "subtokenize" {
                let want = try XCTUnwrap(row[2].array).map { Self.scalars($0.string) }
                ok = MisakiSubtokenize.split(input).map { Optional($0) } == want
            } else {
                let got = MisakiPreprocess.run(input)
                let words = try XCTUnwrap(row[3].array).map { Self.scalars($0.string) }
                let features = try XCTUnwrap(row[4].array).map { f -> (Int, MisakiPreprocess.Feature?) in
                    let a = f.array!
                    if case .number(let d) = a[1] { return (a[0].int!, .stress(d)) }
                    let v = Self.scalars(a[1].string)!
                    return (a[0].int!, v.first == 0x2F ? .phonemes(v) : .numFlags(v))
                }
                ok = Self.scalars(row[2].string) == got.text && words == got.words.map { Optional($0) }
                    && features.count == got.features.count
                    && zip(features, got.features).allSatisfy { $0.0 == $1.word && $0.1 == $1.feature }
            }
            counts[kind, default: (0, 0)].total += 1
            if ok { counts[kind, default: (0, 0)].equal += 1 } else if misses.count < 20 { misses.append("\(kind) \(row[1].string!.debugDescription)") }
        }
        print("[misaki-g2p] pieces equal: " + counts.keys.sorted().map { "\($0) \(counts[$0]!.equal)/\(counts[$0]!.total)" }.joined(separator: ", "))
        XCTAssertGreaterThan(counts["subtokenize"]?.total ?? 0, 4_000)
        XCTAssertGreaterThan(counts["preprocess"]?.total ?? 0, 3_000)
        XCTAssertEqual(misses, [])
    }

    /// spaCy tokens that do not spell the preprocessed text are one line naming the fix.
    func testTokensNotSpellingTheTextNameTheFix() throws {
        let g2p = MisakiG2P(lexicon: try Self.load().1)
        XCTAssertThrowsError(
            try g2p("[Hello](1) world", spacy: [.init(text: "Goodbye", tag: "UH", whitespace: " ")], fallback: nil)
        ) { error in
            XCTAssertTrue("\(error)".contains("preprocessedText"), "\(error)")
        }
    }
}
