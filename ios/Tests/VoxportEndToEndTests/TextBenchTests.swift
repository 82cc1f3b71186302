import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore

/// `chatterbox.text`, `chatterbox_turbo.text` and `audio8.text` (the front ends alone, no graph, no runner) write
/// `text.json` equal to what `voxport tokenize MODEL TEXT --weights random --config reduced`
/// prints for the bundle's snapshot (`text_bench_case.py`), on a short text, a non-ASCII one and
/// a long one each front end splits into several chunks; and bad text input is refused.
final class TextBenchTests: XCTestCase {
    /// Runs a text bench on `text` with `VP_RUNNER=replay` and a recording that does not exist:
    /// were a runner started, it would fail to open. Returns (text.json, result.json).
    func runTextBench(_ bench: String, bundle: String, text: String, tag: String) async throws -> (Any, [String: Any]) {
        let out = try TestScratch.folder("text-bench-\(tag)")
        let env = try BenchEnvironment([
            "VP_BENCH": bench, "VP_BUNDLE": bundle, "VP_TEXT": text, "VP_PASSES": "2", "VP_OUT": out.path,
            "VP_RUNNER": "replay", "VP_REPLAY": out.appendingPathComponent("no-recording").path,
        ])
        try await BenchDriver.run(env)
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("text.json")))
        let result = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
        return (doc, result)
    }

    func assertTextBench(_ bench: String, model: String, file: StaticString = #filePath, line: UInt = #line) async throws {
        let kase = try TextBenchCase.shared()
        XCTAssertGreaterThanOrEqual(kase.texts.count, 3, file: file, line: line)
        let chunkCounts = kase.texts.map { (($0.tokenize[model] as! [String: Any])["chunks"] as! [Any]).count }
        XCTAssertGreaterThan(chunkCounts.max() ?? 0, 2, "a text should split into several chunks: \(chunkCounts)", file: file, line: line)
        XCTAssertTrue(kase.texts.contains { $0.text.unicodeScalars.contains { !$0.isASCII } }, file: file, line: line)
        for (i, t) in kase.texts.enumerated() {
            let (doc, result) = try await runTextBench(bench, bundle: kase.bundles[model]!, text: t.text, tag: "\(model)-\(i)")
            let want = t.tokenize[model]!
            XCTAssertTrue(
                (doc as? NSDictionary)?.isEqual(want) == true,
                "text \(i) \(t.text.debugDescription): text.json\n\(doc)\n!= voxport tokenize's\n\(want)", file: file, line: line)
            XCTAssertEqual(result["runner"] as? String, "none", file: file, line: line)
            XCTAssertEqual(result["calls_per_pass"] as? Int, 0, file: file, line: line)
            XCTAssertEqual(result["chunks"] as? Double, Double(chunkCounts[i]), file: file, line: line)
            XCTAssertGreaterThan(result["front_end_ms"] as? Double ?? 0, 0, "front_end_ms", file: file, line: line)
        }
    }

    func testChatterboxTextBenchWritesWhatTokenizePrints() async throws {
        try await assertTextBench("chatterbox.text", model: "chatterbox")
    }

    func testChatterboxTurboTextBenchWritesWhatTokenizePrints() async throws {
        try await assertTextBench("chatterbox_turbo.text", model: "chatterbox_turbo")
    }

    func testAudio8TextBenchWritesWhatTokenizePrints() async throws {
        try await assertTextBench("audio8.text", model: "audio8_tts")
    }

    /// Blank text: each model's bench refuses it with the Python front end's own message, and
    /// makes no graph call (an injected runner that counts them stays at zero).
    func testBlankTextIsRefusedWithTheFrontEndsWordsBeforeAnyGraphCall() async throws {
        let kase = try TextBenchCase.shared()
        // (a speak bench verifies every hash of its bundle: seconds for Chatterbox in a debug build)
        for (bench, model) in [("chatterbox.speak", "chatterbox"), ("chatterbox.text", "chatterbox"),
                               ("chatterbox_turbo.speak", "chatterbox_turbo"), ("chatterbox_turbo.text", "chatterbox_turbo"),
                               ("audio8.speak", "audio8_tts"), ("audio8.text", "audio8_tts")] {
            let bundle = try ModelBundle.open(URL(fileURLWithPath: kase.bundles[model]!), verify: false)
            let runner = NoGraphRunner(manifest: bundle.manifest)
            let env = try BenchEnvironment([
                "VP_BENCH": bench, "VP_BUNDLE": bundle.url.path, "VP_TEXT": kase.blank, "VP_PASSES": "0",
                "VP_OUT": try TestScratch.folder("blank-\(bench)").path,
            ])
            await assertThrowsAsync({ try await BenchDriver.run(env, runner: runner) }, bench) { e in
                XCTAssertEqual((e as? VoxportError)?.kind, .user, bench)
                XCTAssertEqual((e as? VoxportError)?.message, kase.blankErrors[model], bench)
            }
            XCTAssertEqual(runner.calls, 0, "\(bench): graph calls before the refusal")
        }
    }

    /// A text bench hashes only the files it reads, but those it does: a tokenizer.json changed
    /// after export (in a copy of the bundle's manifest, tokenizer and tables) is refused.
    func testATextBenchRefusesAModifiedTokenizer() async throws {
        let kase = try TextBenchCase.shared()
        let source = URL(fileURLWithPath: kase.bundles["audio8_tts"]!)
        let copy = try TestScratch.folder("text-bench-tampered").appendingPathComponent("bundle")
        try FileManager.default.copyItem(at: source, to: copy)
        let tokenizer = copy.appendingPathComponent("tokenizer.json")
        try (try Data(contentsOf: tokenizer) + Data(" ".utf8)).write(to: tokenizer)
        let env = try BenchEnvironment([
            "VP_BENCH": "audio8.text", "VP_BUNDLE": copy.path, "VP_TEXT": "Hello.", "VP_PASSES": "0",
            "VP_OUT": try TestScratch.folder("text-bench-tampered-out").path,
        ])
        await assertThrowsAsync({ try await BenchDriver.run(env) }) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .bundleIntegrity, "\(e)")
            XCTAssertEqual("\(e)", "\(copy.path): file tokenizer.json is missing or modified; re-export the bundle")
        }
    }

    func testTextWithTokensAndKokoroTextAreRefused() {
        func error(_ env: [String: String]) -> String {
            do {
                _ = try BenchEnvironment(env)
                return "(no error)"
            } catch {
                return "\(error)"
            }
        }
        for bench in ["chatterbox.speak", "chatterbox_turbo.speak", "audio8.speak", "audio8.frame"] {
            let both = error(["VP_BENCH": bench, "VP_BUNDLE": "/b", "VP_TEXT": "Hi.", "VP_TOKENS": "1,2"])
            XCTAssertTrue(both.hasPrefix("VP_TEXT and VP_TOKENS are both set: give one"), both)
            XCTAssertFalse(both.contains("\n"), both)
        }
        // kokoro.speak takes the text or its phonemes, not both.
        let kokoro = error(["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/b", "VP_TEXT": "Hello there.", "VP_PHONEMES": "hˈI"])
        XCTAssertEqual(kokoro, "VP_TEXT and VP_PHONEMES are both set: give one (the text, or its phonemes)")
        XCTAssertEqual(error(["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/b", "VP_TEXT": "Hello there."]), "(no error)")
        XCTAssertEqual(error(["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/b", "VP_PHONEMES": "hˈI"]), "(no error)")
        let kokoroText = error(["VP_BENCH": "kokoro.text", "VP_BUNDLE": "/b", "VP_TEXT": "Hi.", "VP_VOICE": "af"])
        XCTAssertTrue(kokoroText.contains("`voxport phonemize kokoro TEXT`"), kokoroText)
        let noText = error(["VP_BENCH": "audio8.text", "VP_BUNDLE": "/b"])
        XCTAssertTrue(noText.hasPrefix("audio8.text needs VP_TEXT"), noText)
        XCTAssertTrue(error(["VP_BENCH": "chatterbox.text", "VP_BUNDLE": "/b", "VP_TOKENS": "1"]).hasPrefix("chatterbox.text needs VP_TEXT"))
    }
}
