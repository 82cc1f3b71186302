import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The letter-rule fallback in Swift against its Python reference:
/// `conversion/kokoro/fallback/swift_case.py` (a Python child) writes the rules folder, the
/// Python answer for every held-out lexicon word and 2,000 seeded random and edge strings, and,
/// per sentence of english_case.py's corpus, misaki's phoneme string with the rules as its
/// fallback. Swift reads the folder and must answer every token alike, and `MisakiEnglish`
/// with the rules must give misaki's string. A debug run checks english_case.py's `in_subset`
/// sentences; VP_MISAKI_ENGLISH_ALL=1 checks all.
final class MisakiLetterRulesTests: XCTestCase {
    nonisolated(unsafe) static var cached: URL?

    static func load() throws -> URL {
        if let c = cached { return c }
        let out = try TestScratch.folder("misaki-letter-rules-case")
        try PythonChild.run(
            PythonChild.repo.appendingPathComponent("conversion/kokoro/fallback/swift_case.py"),
            MisakiEnglishTests.all ? [out.path, "--sentences"] : [out.path, "--sentences", "--subset"])
        cached = out
        return out
    }

    static func rows(_ url: URL) throws -> [[ExactJSON]] {
        try Data(contentsOf: url).split(separator: UInt8(ascii: "\n")).map {
            try XCTUnwrap(ExactJSON.parse([UInt8]($0)).array)
        }
    }

    /// Every token text: Swift's (phonemes, rating) equals Python's, scalar for scalar.
    func testEveryTokenEqualsPython() throws {
        let folder = try Self.load()
        let rules = try MisakiLetterRules(folder: folder.appendingPathComponent("fallback"))
        var misses: [String] = []
        let rows = try Self.rows(folder.appendingPathComponent("tokens.jsonl"))
        for row in rows {
            let text = try XCTUnwrap(row[0].string)
            let want = (row[1].string, row[2].int)
            let got = rules.read(text)
            if got.phonemes.map(PythonText.scalars) != want.0.map(PythonText.scalars) || got.rating != want.1 {
                misses.append("\(text.debugDescription): swift \(String(describing: got)) python \(String(describing: want))")
            }
        }
        print("[letter-rules] tokens equal: \(rows.count - misses.count)/\(rows.count)")
        XCTAssertGreaterThan(rows.count, 19_000)
        XCTAssertEqual(Array(misses.prefix(20)), [])
    }

    /// `MisakiEnglish.phonemize(text, fallback: rules)` equals Python's
    /// `english_g2p(fallback="rules")(text)[0]` on the corpus sentences.
    func testSentencesWithRulesEqualMisaki() throws {
        let folder = try Self.load()
        let english = try MisakiEnglish(folder: folder)
        let rules = try MisakiLetterRules(folder: folder.appendingPathComponent("fallback"))
        var misses: [String] = []
        var calls = 0
        let rows = try Self.rows(folder.appendingPathComponent("sentences.jsonl"))
        for row in rows {
            let text = try XCTUnwrap(row[3].string), want = try XCTUnwrap(row[4].string)
            let got = try english.phonemize(text) { token in
                calls += 1
                return rules(token)
            }.phonemes
            if PythonText.scalars(got) != PythonText.scalars(want) {
                misses.append("\(row[1].string ?? "") #\(row[2].int ?? -1) \(text.debugDescription): swift \(got.debugDescription) python \(want.debugDescription)")
            }
        }
        let equal = rows.count - misses.count
        print(
            "[letter-rules] sentences equal with the rules: \(equal)/\(rows.count) "
                + "(\(String(format: "%.2f", 100 * Double(equal) / Double(max(rows.count, 1)))) %), \(calls) fallback calls")
        for m in misses.prefix(40) { print("[letter-rules] differs: \(m)") }
        XCTAssertGreaterThan(rows.count, MisakiEnglishTests.all ? 4_600 : 350)
        XCTAssertGreaterThanOrEqual(Double(equal), 0.995 * Double(rows.count))
    }

    /// A folder without the rules file is one line naming its writer.
    func testMissingFileNamesTheWriter() throws {
        let empty = try TestScratch.folder("misaki-letter-rules-empty")
        XCTAssertThrowsError(try MisakiLetterRules(folder: empty)) { error in
            XCTAssertTrue("\(error)".contains("write_fallback"), "\(error)")
        }
    }
}
