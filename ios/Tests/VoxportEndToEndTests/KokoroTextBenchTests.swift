import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore
import VoxportHost
import VoxportText

/// `kokoro.text` (Kokoro's front end alone: misaki in Swift over the bundle's `g2p/`, words in
/// no lexicon read by its letter rules; the chunker; no graph, no runner) writes `text.json` equal
/// to what `voxport phonemize kokoro TEXT --fallback rules` prints (`kokoro_text_case.py`), on a
/// short text, a non-ASCII one that splits into several chunks and one of names no lexicon
/// holds; blank text and a number over 300 digits are refused with Python's words. The bundle
/// is the reduced real export (its own `g2p/`, hashed at open).
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
        for key in ["blank", "long_number"] {
            let refused = kase[key] as! [String: String]
            do {
                _ = try await run(refused["text"]!, bundle: bundle, tag: key)
                XCTFail("\(key): not refused")
            } catch {
                XCTAssertEqual("\(error)", refused["error"], key)
            }
        }
    }

    /// The names text is read by the letter rules: without a fallback misaki would skip its
    /// words, so the comparison above holds only if Swift used the bundle's rules.
    func testTheNamesTextNeedsTheFallback() throws {
        let kase = try Self.pythonCase()
        let names = (kase["cases"] as! [[String: Any]]).last!
        let phonemes = ((names["phonemize"] as! [String: Any])["chunks"] as! [[String: Any]]).map { $0["phonemes"] as! String }
        let bundle = try ModelBundle.open(URL(fileURLWithPath: kase["bundle"] as! String), verify: false)
        let skipping = try KokoroTextChunker.load(bundle, fallback: .skip).chunks(names["text"] as! String)
        XCTAssertFalse(skipping.warnings.isEmpty, "misaki alone cannot say \(names["text"]!)")
        XCTAssertNotEqual(skipping.chunks.map(\.phonemes), phonemes)
        XCTAssertEqual(try KokoroTextChunker.load(bundle).chunks(names["text"] as! String).chunks.map(\.phonemes), phonemes)
    }

    /// A copy of the case's bundle with what `kokoro.text` reads, as an older export left it:
    /// `g2p/` without `fallback/` (layout 4; its hash as that export wrote it), or no `g2p/`.
    func olderBundle(_ tag: String, g2p: Bool, rules: Bool = false) throws -> URL {
        let kase = try Self.pythonCase()
        let source = URL(fileURLWithPath: kase["bundle"] as! String)
        let bare = try TestScratch.folder(tag).appendingPathComponent("bundle")
        try? FileManager.default.removeItem(at: bare)
        try FileManager.default.createDirectory(at: bare, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: source.appendingPathComponent("vocab.json"), to: bare.appendingPathComponent("vocab.json"))
        var manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: source.appendingPathComponent("manifest.json"))) as! [String: Any]
        var meta = manifest["meta"] as! [String: Any]
        var files = meta["files"] as! [String: Any]
        files[KokoroBundleFiles.g2pFolder] = nil
        if g2p {
            let folder = bare.appendingPathComponent(KokoroBundleFiles.g2pFolder)
            try FileManager.default.copyItem(at: source.appendingPathComponent(KokoroBundleFiles.g2pFolder), to: folder)
            if !rules { try FileManager.default.removeItem(at: folder.appendingPathComponent(KokoroBundleFiles.fallbackFolder)) }
            files[KokoroBundleFiles.g2pFolder] = try ContentHash.contentHash(of: folder)
        }
        meta["files"] = files
        manifest["meta"] = meta
        try JSONSerialization.data(withJSONObject: manifest).write(to: bare.appendingPathComponent("manifest.json"))
        return bare
    }

    func refusal(_ bundle: URL, _ tag: String) async throws -> String {
        let scratch = try TestScratch.folder(tag + "-run")
        let env = try BenchEnvironment([
            "VP_BENCH": "kokoro.text", "VP_BUNDLE": bundle.path, "VP_TEXT": "Hello there.", "VP_OUT": scratch.appendingPathComponent("out").path,
            "VP_RUNNER": "replay", "VP_REPLAY": scratch.appendingPathComponent("no-recording").path,
        ])
        do {
            try await BenchDriver.run(env)
            return "(read the text)"
        } catch {
            return "\(error)"
        }
    }

    /// A bundle without `g2p/` (exported before the export wrote it): one line naming the fix,
    /// before any runner starts. (kokoro.speak verifies the graphs first, absent here.)
    func testABundleWithoutG2PIsToldToReExport() async throws {
        let bare = try olderBundle("kokoro-text-bench-no-g2p", g2p: false)
        let said = try await refusal(bare, "kokoro-text-bench-no-g2p")
        XCTAssertEqual(
            said,
            "\(bare.standardizedFileURL.path) has no g2p/ folder (Kokoro's G2P data, to read text): re-export it with "
                + "`voxport export kokoro --overwrite`, or speak phonemes")
    }

    /// A bundle whose `g2p/` has no letter rules (layout 4): one line naming the fix, for the
    /// bench and for the Speaker's chunker alike.
    func testABundleWithoutLetterRulesIsToldToReExport() async throws {
        let bare = try olderBundle("kokoro-text-bench-no-rules", g2p: true)
        let said = try await refusal(bare, "kokoro-text-bench-no-rules")
        XCTAssertTrue(said.hasPrefix("\(bare.standardizedFileURL.path) has no g2p/fallback/"), said)
        XCTAssertTrue(said.hasSuffix("re-export it with `voxport export kokoro --overwrite`"), said)
        XCTAssertFalse(said.contains("\n"), said)
        let bundle = try ModelBundle.open(bare, verify: false)
        XCTAssertThrowsError(try KokoroTextChunker.load(bundle)) { XCTAssertEqual("\($0)", said) }
        XCTAssertNoThrow(try KokoroTextChunker.load(bundle, fallback: .skip), "no rules asked for")
    }

    /// `kokoro.text` hashes the `g2p/` folder it reads: one changed byte in its letter rules is
    /// refused at open, naming the folder.
    func testAChangedG2PFileIsRefused() async throws {
        let copy = try olderBundle("kokoro-text-bench-changed", g2p: true, rules: true)
        let ok = try await refusal(copy, "kokoro-text-bench-changed")
        XCTAssertEqual(ok, "(read the text)", "the copy as exported reads")
        let rules = copy.appendingPathComponent("g2p/fallback/\(MisakiLetterRules.fileName)")
        var bytes = [UInt8](try Data(contentsOf: rules))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: rules)
        let said = try await refusal(copy, "kokoro-text-bench-changed")
        XCTAssertEqual(said, "\(copy.standardizedFileURL.path): file g2p is missing or modified; re-export the bundle")
    }

    /// KokoroSpeaker on the bundle (its default fallback: the bundle's letter rules) makes the
    /// chunks `voxport phonemize kokoro TEXT --fallback rules --max-ids T` prints for the names
    /// text at the bundle's largest token bucket, and `kokoro.speak` with that `VP_TEXT` says
    /// that many chunks (the graphs a stand-in: the text path is what is checked here).
    func testKokoroSpeakReadsTextWithTheBundlesRules() async throws {
        let kase = try Self.pythonCase()
        let speak = kase["speak"] as! [String: Any]
        let text = speak["text"] as! String
        let want = (speak["phonemize"] as! [String: Any])["chunks"] as! [[String: Any]]
        let url = URL(fileURLWithPath: kase["bundle"] as! String)
        let bundle = try ModelBundle.open(url, verify: false)
        let speaker = try KokoroSpeaker(runner: StandInKokoroGraphs(manifest: bundle.manifest), bundle: bundle)
        let (chunks, warnings) = try speaker.chunks(text)
        func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }
        XCTAssertEqual(warnings, [], "the rules read every word")
        XCTAssertGreaterThan(want.count, 1)
        XCTAssertEqual(chunks.map { scalars($0.text) }, want.map { scalars($0["text"] as! String) })
        XCTAssertEqual(chunks.map { scalars($0.phonemes) }, want.map { scalars($0["phonemes"] as! String) })
        XCTAssertEqual(chunks.map { $0.ids.map(Int.init) }, want.map { $0["ids"] as! [Int] })
        let out = try TestScratch.folder("kokoro-speak-text")
        let env = try BenchEnvironment([
            "VP_BENCH": "kokoro.speak", "VP_BUNDLE": url.path, "VP_RUNNER": "worker", "VP_PASSES": "1", "VP_TEXT": text,
            "VP_OUT": out.path,
        ])
        let result = try await BenchDriver.run(env, runner: StandInKokoroGraphs(manifest: bundle.manifest))
        XCTAssertEqual(result["chunks"] as? Double, Double(want.count))
    }
}
