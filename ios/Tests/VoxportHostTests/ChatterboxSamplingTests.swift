import Foundation
import XCTest
import VoxportCore
import VoxportHost

/// Each sampling processor and the draw against `conversion/core/host/sampling.py`, exactly.
final class ChatterboxSamplingTests: XCTestCase {
    func testEveryConfigGivesNumpysScoresAndToken() throws {
        let fx = try ChatterboxFixtures.json(ChatterboxSamplingFixture.self, "sampling.json")
        let z = try ChatterboxFixtures.npz("sampling.npz")
        XCTAssertGreaterThan(fx.cases.count, 5)
        for (i, c) in fx.cases.enumerated() {
            let p = "case\(i)_"
            let logits = try z.array(p + "logits").float32(), uncond = try z.array(p + "uncond").float32()
            let previous = try z.array(p + "previous").int64().map { Int($0) }
            let u = try z.array(p + "uniforms").float32(), want = try z.array(p + "scores").float32()
            let got = try Sampling.processLogits(logits, config: c.config, previous: previous, uncond: uncond)
            XCTAssertEqual(got.map(\.bitPattern), want.map(\.bitPattern), "case \(i) (\(c.order)): scores bit for bit")
            XCTAssertEqual(got.filter(\.isFinite).count, c.kept, "case \(i): tokens kept")
            XCTAssertEqual(try Sampling.gumbelArgmax(got, uniforms: u), c.token, "case \(i): the draw")
        }
    }

    func testCFGAndPenaltyAreTheTransformersRules() throws {
        XCTAssertEqual(Sampling.cfgCombine([1, -2], [0.5, 1], weight: 0.5), [1.25, -3.5])
        XCTAssertEqual(try Sampling.repetitionPenalty([2, -2, 3], previous: [0, 1, 0, -1], penalty: 2), [1, -4, 3])
        XCTAssertThrowsError(try Sampling.repetitionPenalty([1], previous: [5], penalty: 2))
    }

    func testPairwiseSumIsNumpysOrder() throws {
        // numpy's float32 sum of 0.1 x 1000 is 100.000015 in pairwise order, 99.99905 sequentially.
        let a = [Float](repeating: 0.1, count: 1000)
        XCTAssertEqual(PairwiseSum.float32(a), 100.000015)
        XCTAssertNotEqual(PairwiseSum.float32(a), a.reduce(0, +))
    }

    func testDropInvalidTokensKeepsWhatFollowsTheLastStart() throws {
        let fx = try ChatterboxFixtures.json(ChatterboxDropFixture.self, "drop_invalid.json")
        for c in fx.cases { XCTAssertEqual(SpeechTokens.dropInvalid(c.tokens), c.speech, "\(c.tokens)") }
    }
}
