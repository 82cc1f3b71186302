import XCTest

@testable import VoxportText

/// The corpus tests can fail: each tokenizer's test, run on a deliberately wrong engine (the
/// bugs of published Swift tokenizers), finds strings where the ids differ from `tokenizers`.
/// Not every flaw shows on every tokenizer (a byte-level vocabulary holds no two canonically
/// equivalent tokens, so `String` keys cannot confuse it), so each test names the flaws that
/// must show on it; the matrix of counts is printed.
final class WrongEngineTests: XCTestCase {
    func misses(_ name: TextFixtures.Name, _ flaw: EngineFlaw) throws -> Int {
        let r = try TokenizerCorpusTests.compare(name, .building, flaw: flaw, quiet: true)
        print("[wrong engine] \(name.rawValue) with \(flaw): \(r.compared - r.equal) of \(r.compared) strings differ")
        return r.compared - r.equal
    }

    func testWhisperFailsOnGraphemesAndGreedyMatch() throws {
        XCTAssertGreaterThan(try misses(.whisper, .graphemeClusters), 0)
        XCTAssertGreaterThan(try misses(.whisper, .greedyLongestMatch), 0)
        _ = try misses(.whisper, .stringKeyedMerges)
    }

    func testQwen2ShapedFailsOnGraphemesGreedyMatchAndFoundationNFC() throws {
        XCTAssertGreaterThan(try misses(.qwen2, .graphemeClusters), 0)
        XCTAssertGreaterThan(try misses(.qwen2, .foundationNFC), 0)
        XCTAssertGreaterThan(try misses(.qwen2, .greedyLongestMatch), 0)
        _ = try misses(.qwen2, .stringKeyedMerges)
    }

    func testChatterboxShapedFailsOnEveryFlaw() throws {
        XCTAssertGreaterThan(try misses(.chatterboxShaped, .graphemeClusters), 0)
        XCTAssertGreaterThan(try misses(.chatterboxShaped, .greedyLongestMatch), 0)
        XCTAssertGreaterThan(try misses(.chatterboxShaped, .stringKeyedMerges), 0)
    }

    func testChatterboxStandInFailsOnGraphemes() throws {
        XCTAssertGreaterThan(try misses(.chatterboxStandIn, .graphemeClusters), 0)
        _ = try misses(.chatterboxStandIn, .stringKeyedMerges)
    }

    func testAudio8StandInFailsOnGraphemes() throws {
        XCTAssertGreaterThan(try misses(.audio8StandIn, .graphemeClusters), 0)
    }
}
