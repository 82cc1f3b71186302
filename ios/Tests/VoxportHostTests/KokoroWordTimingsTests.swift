import Foundation
import XCTest
import VoxportTestSupport
import VoxportHost

/// KokoroWordTimings against the publisher's `KPipeline.join_timestamps`, which wrote
/// `Fixtures/kokoro/timings.json`: misaki's tokens of the fixture sentences with seeded
/// durations, and hand-made tokens (one unpronounced, a multi-scalar phoneme) cut shorter.
final class KokoroWordTimingsTests: XCTestCase {
    struct Fixture: Decodable {
        struct Token: Decodable {
            let text: String
            let phonemes: String?
            let whitespace: String
        }
        struct Word: Decodable {
            let text: String
            let start: Double
            let end: Double
        }
        struct Case: Decodable {
            let tokens: [Token]
            let pred_dur: [Int]
            let words: [Word]
        }
        let cases: [Case]
    }

    func testEqualToThePublishersTimestamps() throws {
        let fx = try KokoroFixtures.json(Fixture.self, "timings.json")
        XCTAssertGreaterThanOrEqual(fx.cases.count, 8)
        var timed = 0
        for (k, c) in fx.cases.enumerated() {
            let tokens = c.tokens.map { KokoroWordToken(text: $0.text, phonemes: $0.phonemes, whitespace: $0.whitespace) }
            let got = KokoroWordTimings.words(tokens, predDur: c.pred_dur)
            XCTAssertEqual(got, c.words.map { WordTiming(word: $0.text, start: $0.start, end: $0.end) }, "case \(k)")
            timed += got.count
        }
        XCTAssertGreaterThan(timed, 20)
        XCTAssertTrue(fx.cases.contains { $0.tokens.contains { $0.phonemes == nil } }, "an unpronounced token is covered")
    }
}
