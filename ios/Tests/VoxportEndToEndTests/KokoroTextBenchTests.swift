import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore

/// `kokoro.text` (Kokoro's front end alone: misaki in Swift over the bundle's `g2p/`, the
/// chunker; no graph, no runner) writes `text.json` equal to what `voxport phonemize kokoro
/// TEXT` prints (`kokoro_text_case.py`), on a short text and a non-ASCII one that splits into
/// several chunks; blank text is refused with Python's words. The bundle is the reduced
/// one's manifest and vocab.json with a g2p/ folder the writers made (the export has none yet).
final class KokoroTextBenchTests: XCTestCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("kokoro_text_case.py")

    nonisolated(unsafe) static var made: [String: Any]?

    static func pythonCase() throws -> [String: Any] {
        if let made { return made }
        let dir = try TestScratch.folder("kokoro-text-bench-case")
        try PythonChild.run(script, ["make", dir.path])
        made = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("case.json"))) as? [String: Any]
        return try XCTUnwrap(made)
    }

    func run(_ text: String, bundle: String, tag: String) async throws -> (Any, [String: Any]) {
        let out = try TestScratch.folder("kokoro-text-bench-\(tag)")
        let env = try BenchEnvironment([
            "VP_BENCH": "kokoro.text", "VP_BUNDLE": bundle, "VP_TEXT": text, "VP_PASSES": "1", "VP_OUT": out.path,
            // were a runner started, it would fail to open this recording
            "VP_RUNNER": "replay", "VP_REPLAY": out.appendingPathComponent("no-recording").path,
        ])
        try await BenchDriver.run(env)
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("text.json")))
        let result = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("result.json"))) as! [String: Any]
        return (doc, result)
    }

    func testKokoroTextBenchWritesWhatPhonemizePrints() async throws {
        let kase = try Self.pythonCase()
        let bundle = kase["bundle"] as! String
        let cases = kase["cases"] as! [[String: Any]]
        let counts = cases.map { (($0["phonemize"] as! [String: Any])["chunks"] as! [Any]).count }
        XCTAssertGreaterThan(counts.max() ?? 0, 2, "a text should split into several chunks: \(counts)")
        XCTAssertTrue(cases.contains { ($0["text"] as! String).unicodeScalars.contains { !$0.isASCII } })
        for (i, c) in cases.enumerated() {
            let (doc, result) = try await run(c["text"] as! String, bundle: bundle, tag: "\(i)")
            let want = c["phonemize"] as! [String: Any]
            XCTAssertTrue((doc as? NSDictionary)?.isEqual(want) == true, "text \(i): text.json\n\(doc)\n!= voxport phonemize's\n\(want)")
            XCTAssertEqual(result["runner"] as? String, "none")
            XCTAssertEqual(result["calls_per_pass"] as? Int, 0)
            XCTAssertEqual(result["chunks"] as? Double, Double(counts[i]))
            XCTAssertGreaterThan(result["front_end_ms"] as? Double ?? 0, 0, "front_end_ms")
        }
        let blank = kase["blank"] as! [String: String]
        do {
            _ = try await run(blank["text"]!, bundle: bundle, tag: "blank")
            XCTFail("blank text was not refused")
        } catch {
            XCTAssertEqual("\(error)", blank["error"])
        }
    }

    /// A bundle without `g2p/` (exported before the export wrote it): one line naming the fix,
    /// before any runner starts.
    func testABundleWithoutG2PIsToldToReExport() async throws {
        let kase = try Self.pythonCase()
        let source = URL(fileURLWithPath: kase["bundle"] as! String)
        let scratch = try TestScratch.folder("kokoro-text-bench-no-g2p")
        let bare = scratch.appendingPathComponent("bundle")
        try? FileManager.default.removeItem(at: bare)
        try FileManager.default.createDirectory(at: bare, withIntermediateDirectories: true)
        for name in ["manifest.json", "vocab.json"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: bare.appendingPathComponent(name))
        }
        for bench in ["kokoro.text"] {  // (kokoro.speak verifies the graphs first, absent here)
            let env = try BenchEnvironment([
                "VP_BENCH": bench, "VP_BUNDLE": bare.path, "VP_TEXT": "Hello there.", "VP_OUT": scratch.appendingPathComponent("out").path,
                "VP_RUNNER": "replay", "VP_REPLAY": scratch.appendingPathComponent("no-recording").path,
            ])
            do {
                try await BenchDriver.run(env)
                XCTFail("\(bench): a bundle without g2p/ read text")
            } catch {
                XCTAssertEqual(
                    "\(error)",
                    "\(bare.standardizedFileURL.path) has no g2p/ folder (Kokoro's G2P data, to read text): re-export it with "
                        + "`voxport export kokoro --overwrite`, or speak phonemes", bench)
            }
        }
    }
}
