import Foundation
import XCTest

@testable import VoxportText

/// misaki's number reader (`get_number`, num2words) in Swift against misaki itself, on the
/// case MisakiLexiconTests loads: every recorded corpus call that misaki sent to `get_number`
/// and every direct call on the generated number tokens
/// (`conversion/kokoro/lexicon/number_cases.py`: integers to 10^15 and beyond, commas, ordinals,
/// years by tag, decimals, negatives, currency, plurals, `is_head` and `num_flags`), all of
/// them in a debug run. The expected phonemes are misaki's answers.
final class MisakiNumbersTests: XCTestCase {
    func testEveryNumberCallEqualsMisaki() throws {
        let c = try MisakiLexiconTests.load()
        let lexicon = try MisakiLexiconTests.lexicon(c)
        var checked: [String: (equal: Int, total: Int)] = [:]
        var misses: [String] = []
        var raising = 0
        let t0 = Date()
        for call in c.calls where call.viaNumber || call.set == "number" {
            let got = lexicon(call.token, call.context)
            let ok = MisakiLexiconTests.same(got, call.expected)
            checked[call.set, default: (0, 0)].total += 1
            if ok { checked[call.set, default: (0, 0)].equal += 1 }
            if call.expected == .number { raising += 1 }
            if !ok {
                misses.append(
                    "\(call.token.text.debugDescription) tag \(call.token.tag) currency \(call.token.currency ?? "-") "
                        + "head \(call.token.isHead) flags \(call.token.numFlags.debugDescription) stress \(String(describing: call.token.stress)): "
                        + "swift \(got) misaki \(call.expected)")
            }
        }
        let total = checked.values.reduce(0) { $0 + $1.total }
        let summary = checked.keys.sorted().map { "\($0) \(checked[$0]!.equal)/\(checked[$0]!.total)" }.joined(separator: ", ")
        print("[misaki-numbers] \(summary) (\(raising) where misaki raises); \(String(format: "%.2f", Date().timeIntervalSince(t0))) s")
        XCTAssertGreaterThan(checked["number"]?.total ?? 0, 3_000)
        XCTAssertGreaterThan(total - (checked["number"]?.total ?? 0), 1_000)
        XCTAssertEqual(misses.count, 0, misses.prefix(30).joined(separator: "\n"))
    }

    /// English number words, spot values written out by hand ("and" after hundreds and before a
    /// last group under 100, ", " between groups; ordinals' "twelfth", "-ieth"; years by
    /// hundreds); EnglishNumberWordsTests holds them to num2words on 11,694 cases.
    func testNumberWordsByHand() {
        typealias N = EnglishNumberWords
        XCTAssertEqual(N.cardinal(0), "zero")
        XCTAssertEqual(N.cardinal(115), "one hundred and fifteen")
        XCTAssertEqual(N.cardinal(1_001_000), "one million, one thousand")
        XCTAssertEqual(N.ordinal(N.Natural(12)), "twelfth")
        XCTAssertEqual(N.ordinal(N.Natural(40)), "fortieth")
        XCTAssertEqual(N.year(1905), "nineteen oh-five")
        XCTAssertEqual(N.year(2000), "two thousand")
        XCTAssertNil(N.cardinal(N.Natural.power10(306)))
    }
}
