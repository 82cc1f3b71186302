import XCTest

@testable import VoxportText

/// Swift ids == Hugging Face `tokenizers` ids on every corpus string, for each real-size
/// tokenizer and the snapshots' stand-ins (issue 30, deliver 2). Each prints its counts.
/// The held-out fifth of the corpus has tests of its own (`…HeldOut`), run once the engine was
/// done.
final class TokenizerCorpusTests: XCTestCase {
    /// Every string of `part` compared; returns (compared, equal) and names the first misses.
    static func compare(
        _ name: TextFixtures.Name, _ part: TextFixtures.Part, flaw: EngineFlaw = .none, quiet: Bool = false
    ) throws -> (compared: Int, equal: Int, firstMiss: String?) {
        let corpus = try TextFixtures.corpus()
        let tokenizer = try Tokenizer(json: try name.tokenizerJSON(), flaw: flaw)
        let expected = try name.expected()
        XCTAssertEqual(expected.count, corpus.strings.count, "\(name.rawValue): one id list per corpus string")
        var equal = 0, compared = 0
        var firstMiss: String? = nil
        for i in corpus.indices(part) {
            compared += 1
            let got = try tokenizer.encode(corpus.strings[i])
            if got == expected[i] {
                equal += 1
            } else if firstMiss == nil {
                firstMiss = "string \(i) \(corpus.strings[i].debugDescription): swift \(got) vs tokenizers \(expected[i].map { "\($0)" } ?? "error")"
            }
        }
        if !quiet {
            print("[tokenizer] \(name.rawValue) (\(part.rawValue)): \(compared) strings compared, \(equal) equal")
        }
        return (compared, equal, firstMiss)
    }

    func check(_ name: TextFixtures.Name, _ part: TextFixtures.Part) throws {
        let r = try Self.compare(name, part)
        XCTAssertGreaterThan(r.compared, part == .heldOut ? 1_000 : 4_000)
        XCTAssertEqual(r.equal, r.compared, r.firstMiss ?? "")
    }

    func testWhisper() throws { try check(.whisper, .building) }
    func testQwen2Shaped() throws { try check(.qwen2, .building) }
    func testChatterboxShaped() throws { try check(.chatterboxShaped, .building) }
    func testChatterboxStandIn() throws { try check(.chatterboxStandIn, .building) }
    func testAudio8StandIn() throws { try check(.audio8StandIn, .building) }

    func testWhisperHeldOut() throws { try check(.whisper, .heldOut) }
    func testQwen2ShapedHeldOut() throws { try check(.qwen2, .heldOut) }
    func testChatterboxShapedHeldOut() throws { try check(.chatterboxShaped, .heldOut) }
    func testChatterboxStandInHeldOut() throws { try check(.chatterboxStandIn, .heldOut) }
    func testAudio8StandInHeldOut() throws { try check(.audio8StandIn, .heldOut) }
}
