import Foundation
import XCTest
import VoxportCore
import VoxportHost
import VoxportRunner

/// The Turbo T3 host against the Python host (`conversion/chatterbox_turbo/swift_fixtures.py`):
/// the rows, the sampler in Turbo's order, and the loop through a ReplayRunner holding the
/// exported graph's answers (every graph input the Swift host sends checked against Python's).
final class ChatterboxTurboT3Tests: XCTestCase {
    func testPrefillAndStepRowsArePythons() throws {
        let tables = try ChatterboxTurboFixtures.tables()
        let fx = try ChatterboxTurboFixtures.caseJSON()
        let z = try ChatterboxTurboFixtures.caseArrays()
        let (rows, count) = try tables.prefillEmbeds(cond: try ChatterboxTurboFixtures.cond(z), textIDs: fx.text_ids)
        let want = try z.array("prefill_embeds")
        XCTAssertEqual(count, want.shape[0])
        let expected = try want.float32(), h = tables.hidden
        XCTAssertEqual(rows.count, expected.count)
        let speakerAbs = (0..<h).map { abs(rows[$0] - expected[$0]) }.max()!
        print(String(format: "turbo prefill: %d rows, speaker row max abs %.2e", count, speakerAbs))
        // Only the speaker row is arithmetic (a 256-long dot product); the rest are lookups.
        XCTAssertLessThan(speakerAbs, 1e-6)
        XCTAssertEqual(Array(rows[h...]).map(\.bitPattern), Array(expected[h...]).map(\.bitPattern))
        let steps = try ChatterboxTurboFixtures.rows(z.array("step_embeds"))
        XCTAssertEqual(steps.count, fx.tokens.count)
        for (token, row) in zip(fx.tokens, steps) { XCTAssertEqual(try tables.stepEmbeds(token: token), row, "token \(token)") }
    }

    func testLoopThroughReplayDrawsPythonsTokens() async throws {
        let fx = try ChatterboxTurboFixtures.caseJSON()
        let z = try ChatterboxTurboFixtures.caseArrays()
        let runner = try ChatterboxTurboFixtures.replay()
        let host = ChatterboxTurboT3(
            tables: try ChatterboxTurboFixtures.tables(), prefillBuckets: try .oneDim("P", sizes: fx.prefill_buckets),
            kvLength: fx.kv_length)
        let result = try await host.generate(
            runner: runner, cond: try ChatterboxTurboFixtures.cond(z), textIDs: fx.text_ids, sampling: fx.config,
            uniforms: RecordedUniforms(try ChatterboxTurboFixtures.rows(z.array("uniforms"))), maxNewTokens: fx.max_new_tokens)
        print("turbo loop: \(result.tokens.count) tokens in \(result.steps) draws, stopped \(result.stopped): \(result.tokens)")
        XCTAssertEqual(result.tokens, fx.tokens)
        XCTAssertEqual(result.stopped, fx.stopped)
        XCTAssertEqual(result.steps, fx.draws)
        XCTAssertEqual(runner.remaining, 0, "every recorded call made, in order")
        XCTAssertTrue(fx.tokens.contains(ChatterboxTurboT3Tables.startSpeech), "the case feeds a drawn start token back")
    }

    /// Draw by draw over the recorded logits, each with Python's history: how many draws differ.
    func differingDraws(order: SamplingOrder, startInDrawZero: Bool = true) throws -> (Int, Int) {
        let fx = try ChatterboxTurboFixtures.caseJSON()
        let uniforms = try ChatterboxTurboFixtures.rows(ChatterboxTurboFixtures.caseArrays().array("uniforms"))
        let runner = try ChatterboxTurboFixtures.replay()
        var config = fx.config
        config.order = order
        let drawn = fx.tokens + (fx.stopped ? [ChatterboxTurboT3Tables.stopSpeech] : [])
        var differ = 0
        for step in 0..<fx.draws {
            let logits = try runner.steps[step].outputs["logits"]!.float32()
            var history = ChatterboxTurboT3.penaltyHistory(step: step, drawn: Array(drawn[..<step]))
            if step == 0, !startInDrawZero { history = [] }
            let scores = try Sampling.processLogits(logits, config: config, previous: history)
            differ += try Sampling.gumbelArgmax(scores, uniforms: uniforms[step]) == drawn[step] ? 0 : 1
        }
        return (differ, fx.draws)
    }

    func testDrawsFromRecordedLogitsAndTheFaultsTheyCatch() throws {
        let (ours, draws) = try differingDraws(order: .chatterboxTurbo)
        let (penaltyFirst, _) = try differingDraws(order: SamplingOrder())
        let (noStart, _) = try differingDraws(order: .chatterboxTurbo, startInDrawZero: false)
        print("turbo draws differing of \(draws): ours \(ours), penalty first \(penaltyFirst), start token left out of draw 0 \(noStart)")
        XCTAssertEqual(ours, 0)
        XCTAssertGreaterThan(penaltyFirst, 0, "the case tells Turbo's order from transformers'")
        XCTAssertGreaterThan(noStart, 0, "the case tells draw 0's start-token penalty")
    }

    func testSamplerInTurboOrderIsNumpys() throws {
        let fx = try ChatterboxTurboFixtures.folder.json(ChatterboxTurboSamplingFixture.self, "sampling.json")
        let z = try ChatterboxTurboFixtures.folder.npz("sampling.npz")
        var penaltyFirstDiffer = 0
        for (i, c) in fx.cases.enumerated() {
            let p = "case\(i)_"
            let logits = try z.array(p + "logits").float32(), want = try z.array(p + "scores").float32()
            let previous = try z.array(p + "previous").int64().map { Int($0) }
            let got = try Sampling.processLogits(logits, config: c.config, previous: previous)
            XCTAssertEqual(got.map(\.bitPattern), want.map(\.bitPattern), "case \(i): scores bit for bit")
            XCTAssertEqual(got.filter(\.isFinite).count, c.kept, "case \(i): tokens kept")
            var first = c.config
            first.order = SamplingOrder()
            let wrong = try Sampling.processLogits(logits, config: first, previous: previous)
            penaltyFirstDiffer += wrong.map(\.bitPattern) == want.map(\.bitPattern) ? 0 : 1
        }
        print("turbo sampler: \(fx.cases.count) cases equal numpy's; penalty first differs on \(penaltyFirstDiffer)")
        XCTAssertGreaterThan(fx.cases.count, 10)
        XCTAssertGreaterThan(penaltyFirstDiffer, 0)
    }

    func testBadInputsRefusedInOneLineBeforeAnyGraphCall() async throws {
        let fx = try ChatterboxTurboFixtures.caseJSON()
        let z = try ChatterboxTurboFixtures.caseArrays()
        let tables = try ChatterboxTurboFixtures.tables()
        let host = ChatterboxTurboT3(tables: tables, prefillBuckets: try .oneDim("P", sizes: fx.prefill_buckets), kvLength: fx.kv_length)
        let cond = try ChatterboxTurboFixtures.cond(z)
        let uniforms = RecordedUniforms([])
        var minP = fx.config
        minP.minP = 0.05
        let cases: [(String, TurboCond, [Int], SamplingConfig, Int)] = [
            ("text ids must be in [0, 32)", cond, [32], fx.config, 4),
            ("text ids must be a non-empty", cond, [], fx.config, 4),
            ("speaker_emb must hold 256", TurboCond(speakerEmb: [1, 2, 3], promptTokens: []), fx.text_ids, fx.config, 4),
            ("prompt speech ids must be in", TurboCond(speakerEmb: cond.speakerEmb, promptTokens: [6563]), fx.text_ids, fx.config, 4),
            ("KV cache too short", cond, fx.text_ids, fx.config, 200),
            ("without CFG or min-p", cond, fx.text_ids, minP, 4),
            ("max_new_tokens must be >= 1", cond, fx.text_ids, fx.config, 0),
        ]
        for (message, c, text, sampling, n) in cases {
            let runner = ReplayRunner(manifest: try ChatterboxTurboFixtures.replay().manifest, steps: [])  // any call fails
            do {
                _ = try await host.generate(runner: runner, cond: c, textIDs: text, sampling: sampling, uniforms: uniforms, maxNewTokens: n)
                XCTFail("\(message): not refused")
            } catch let e as VoxportError {
                XCTAssertTrue(e.message.contains(message), "\(e.message) (want \(message))")
                XCTAssertFalse(e.message.contains("\n"))
            }
        }
        XCTAssertThrowsError(try tables.stepEmbeds(token: ChatterboxTurboT3Tables.vocab))
    }
}
