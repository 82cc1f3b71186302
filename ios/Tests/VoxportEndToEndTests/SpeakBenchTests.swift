import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore
import VoxportRunner

/// `audio8.speak` with `VP_TEXT` on the reduced host bundle through a real worker: the text goes
/// through `Audio8Speaker`'s stream and result.json says when the first audio and the whole
/// utterance were ready; the same text as `voxport tokenize`'s ids (`VP_TOKENS`, the host path)
/// gives the same pieces and as much audio.
final class SpeakBenchTests: XCTestCase {
    func testAudio8SpeakWithTextReportsFirstAudioBeforeTheUtterancesEnd() async throws {
        let kase = try TextBenchCase.shared()
        let path = kase.bundles["audio8_tts"]!
        let runner = try await WorkerRunner(bundle: URL(fileURLWithPath: path), graphs: ["ar", "codec"])
        do {
            // two sentences, two pieces: the first piece's audio is out before the second is made
            let text = "Hello there. See you."
            let tokens = try PythonChild.run(
                PythonChild.voxport, ["tokenize", "audio8_tts", text, "--weights", "random", "--config", "reduced"])
            func bench(_ input: [String: String], _ tag: String) async throws -> [String: Any] {
                let out = try TestScratch.folder("speak-bench-\(tag)")
                let env = try BenchEnvironment(input.merging([
                    "VP_BENCH": "audio8.speak", "VP_BUNDLE": path, "VP_RUNNER": "worker", "VP_PASSES": "0",
                    "VP_MAX_FRAMES": "6", "VP_SEED": "3", "VP_OUT": out.path,
                ]) { $1 })
                try await BenchDriver.run(env, runner: runner)
                return try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
            }
            let spoken = try await bench(["VP_TEXT": text], "text")
            let first = try XCTUnwrap(spoken["first_audio_ms"] as? Double)
            let whole = try XCTUnwrap(spoken["utterance_ms"] as? Double)
            XCTAssertGreaterThan(first, 0)
            XCTAssertGreaterThan(whole, 0)
            XCTAssertLessThan(first, whole, "the first piece's audio is ready before the second piece is made")
            XCTAssertEqual(spoken["cold_first_audio_ms"] as? Double, first, "VP_PASSES=0: the cold pass is the only one")
            XCTAssertEqual(spoken["cold_utterance_ms"] as? Double, whole)
            XCTAssertLessThanOrEqual(whole, try XCTUnwrap(spoken["cold_pass_ms"] as? Double) + 0.01, "inside the pass")
            XCTAssertEqual(spoken["streamed"] as? Double, 1)
            XCTAssertEqual(spoken["pieces"] as? Double, 2)

            let ided = try await bench(["VP_TOKENS": tokens], "tokens")
            XCTAssertEqual(ided["pieces"] as? Double, 2)
            XCTAssertEqual(ided["streamed"] as? Double, 0)
            XCTAssertEqual(ided["audio_seconds"] as? Double, spoken["audio_seconds"] as? Double, "the same frames, streamed or whole")
            let idedFirst = try XCTUnwrap(ided["first_audio_ms"] as? Double)
            XCTAssertGreaterThan(idedFirst, 0)
            XCTAssertLessThan(idedFirst, try XCTUnwrap(ided["utterance_ms"] as? Double))
            XCTAssertTrue(runner.isAlive, "the bench closed the injected worker")
        } catch {
            await runner.close()
            throw error
        }
        await runner.close()
    }
}
