import Foundation
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The app's own English number words (`EnglishNumberWords`) against num2words 0.5.14 itself,
/// called as a black box by `conversion/kokoro/lexicon/number_words_case.py` (a Python child):
/// cardinals and ordinals of 0..2000, of random integers of every length to 309 digits and of
/// powers of ten and their neighbours (num2words raises from 10^306 on), years, and floats
/// read from seeded decimal texts. Every expected answer is num2words'.
final class EnglishNumberWordsTests: XCTestCase {
    func testEveryCaseEqualsNum2Words() throws {
        let script = PythonChild.repo.appendingPathComponent("conversion/kokoro/lexicon/number_words_case.py")
        let t0 = Date()
        let text = try PythonChild.run(script, [])
        let t1 = Date()
        typealias W = EnglishNumberWords
        var counts: [String: Int] = [:]
        var misses: [String] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            XCTAssertEqual(fields.count, 3, String(line.prefix(80)))
            guard fields.count == 3 else { continue }
            let (kind, input, expected) = (fields[0], fields[1], fields[2])
            let got: String?
            switch kind {
            case "cardinal": got = W.Natural(decimal: input).flatMap(W.cardinal)
            case "ordinal": got = W.Natural(decimal: input).flatMap(W.ordinal)
            case "year": got = W.year(try XCTUnwrap(Int(input)))
            case "float": got = W.cardinalOfFloat(input)
            default:
                XCTFail("unknown case kind \(kind)")
                continue
            }
            counts[kind, default: 0] += 1
            if (got ?? "!raises") != expected {
                misses.append("\(kind) \(input.prefix(60)): swift \(got?.prefix(160) ?? "nil") num2words \(expected.prefix(160))")
            }
        }
        let summary = counts.keys.sorted().map { "\($0) \(counts[$0]!)" }.joined(separator: ", ")
        print(
            "[number-words] \(counts.values.reduce(0, +)) cases (\(summary)), \(misses.count) differ; "
                + String(format: "python %.2f s, swift %.2f s", t1.timeIntervalSince(t0), Date().timeIntervalSince(t1)))
        XCTAssertGreaterThan(counts["cardinal"] ?? 0, 3_000)
        XCTAssertGreaterThan(counts["ordinal"] ?? 0, 3_000)
        XCTAssertGreaterThan(counts["year"] ?? 0, 3_000)
        XCTAssertGreaterThan(counts["float"] ?? 0, 1_000)
        XCTAssertEqual(misses.count, 0, misses.prefix(20).joined(separator: "\n"))
    }
}
