import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// misaki's English G2P end to end in Swift (spaCy's tokenizer, the tagger, the lexicon and the
/// G2P stages chained by `MisakiEnglish`) against misaki itself:
/// `conversion/kokoro/lexicon/english_case.py` (a Python child) writes the three data folders
/// from the pipeline misaki runs and, per sentence of the lexicon's and the tagger's corpora,
/// misaki's phoneme string and every espeak-ng fallback call with its answer. Swift gets only
/// the text; the fallback answers are replayed in order, and a fallback asked for a word misaki
/// did not ask for is a failure. A debug run checks english_case.py's `in_subset` sentences;
/// VP_MISAKI_ENGLISH_ALL=1 checks all.
final class MisakiEnglishTests: XCTestCase {
    struct Sentence {
        let set: String
        let corpus: String
        let index: Int
        let text: String
        let fallbacks: [MisakiRecording.Answer]
        let phonemes: String
        let spacy: [MisakiG2P.SpacyToken]
    }

    static let all = ProcessInfo.processInfo.environment["VP_MISAKI_ENGLISH_ALL"] == "1"
    nonisolated(unsafe) static var cached: ([Sentence], URL)?

    static func load() throws -> ([Sentence], URL) {
        if let c = cached { return c }
        let out = try TestScratch.folder("misaki-english-case")
        try PythonChild.run(
            PythonChild.repo.appendingPathComponent("conversion/kokoro/lexicon/english_case.py"),
            all ? [out.path] : [out.path, "--subset"])
        let text = try Data(contentsOf: out.appendingPathComponent("cases.jsonl"))
        var sentences: [Sentence] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let row = try XCTUnwrap(ExactJSON.parse([UInt8](line)).array)
            XCTAssertEqual(row.count, 7)
            let fallbacks = try MisakiRecording.answers(row[4])
            let spacy = try MisakiRecording.spacyTokens(row[6])
            sentences.append(
                Sentence(
                    set: try XCTUnwrap(row[0].string), corpus: try XCTUnwrap(row[1].string), index: try XCTUnwrap(row[2].int),
                    text: try XCTUnwrap(row[3].string), fallbacks: fallbacks, phonemes: try XCTUnwrap(row[5].string),
                    spacy: spacy))
        }
        cached = (sentences, out)
        return cached!
    }

    static func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }

    /// Why a sentence differs: the first token or tag Swift's spaCy stages disagree on.
    static func cause(_ english: MisakiEnglish, _ s: Sentence) -> String {
        let mine = english.spacy(MisakiG2P.preprocessedText(s.text))
        guard mine.map(\.text) == s.spacy.map(\.text), mine.map(\.whitespace) == s.spacy.map(\.whitespace) else {
            return "tokens differ: swift \(mine.map(\.text)) spaCy \(s.spacy.map(\.text))"
        }
        if let k = mine.indices.first(where: { mine[$0].tag != s.spacy[$0].tag }) {
            return "tag of \(mine[k].text.debugDescription): swift \(mine[k].tag) spaCy \(s.spacy[k].tag)"
        }
        return "tokens and tags equal: G2P stages"
    }

    /// Every checked sentence: Swift's phoneme string from the text alone equals misaki's, and
    /// the fallback is asked for exactly the words misaki asked it for, in order.
    func testEverySentenceEqualsMisaki() throws {
        let (sentences, folder) = try Self.load()
        let english = try MisakiEnglish(folder: folder)
        var strings: [String: (equal: Int, total: Int)] = [:]
        var misses: [String] = []
        var checked = 0
        let t0 = Date()
        for s in sentences {
            let fallback = ReplayedFallback(s.fallbacks)
            let got: String
            do {
                got = try english.phonemize(s.text) { fallback($0) }.phonemes
            } catch {
                got = "<\(error)>"
            }
            let asked = fallback.asked
            checked += 1
            let ok = Self.scalars(got) == Self.scalars(s.phonemes) && asked == s.fallbacks.map(\.text)
            strings[s.set, default: (0, 0)].total += 1
            if ok {
                strings[s.set, default: (0, 0)].equal += 1
            } else if misses.count < 40 {
                misses.append(
                    "\(s.corpus) #\(s.index) \(s.text.debugDescription): swift \(got.debugDescription) misaki \(s.phonemes.debugDescription)"
                        + (asked == s.fallbacks.map(\.text) ? "" : " (fallback asked \(asked), misaki \(s.fallbacks.map(\.text)))"))
            }
        }
        let elapsed = Date().timeIntervalSince(t0)
        let equal = strings.values.map(\.equal).reduce(0, +)
        let summary = strings.keys.sorted().map { "\($0) \(strings[$0]!.equal)/\(strings[$0]!.total)" }.joined(separator: ", ")
        print(
            "[misaki-english] phoneme strings and fallback calls equal: all \(equal)/\(checked) (\(summary)); "
                + "\(String(format: "%.2f", elapsed / Double(max(checked, 1)) * 1e3)) ms per sentence end to end")
        for m in misses { print("[misaki-english] differs: \(m)") }
        for s in sentences.filter({ s in misses.contains { $0.hasPrefix("\(s.corpus) #\(s.index) ") } }) {
            print("[misaki-english] cause \(s.corpus) #\(s.index): \(Self.cause(english, s))")
        }
        XCTAssertGreaterThan(checked, Self.all ? 4_600 : 350)
        XCTAssertEqual(misses, [])
    }

    /// A folder without one of the three data sets is one line naming its writer.
    func testMissingDataFolderNamesTheWriter() throws {
        let empty = try TestScratch.folder("misaki-english-empty")
        XCTAssertThrowsError(try MisakiEnglish(folder: empty)) { error in
            XCTAssertTrue("\(error)".contains("write_tokenizer"), "\(error)")
        }
    }
}
