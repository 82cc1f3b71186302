import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner

/// `BundleSpeaker.open` on bundle folders made here from the fixtures' manifests and host files
/// (stand-in graph assets, every hash real, so the bundle verifies as an exported one does).
final class BundleSpeakerTests: XCTestCase {
    /// A verified bundle folder: `manifest` (a fixture manifest's JSON) with a small stand-in
    /// asset per graph and `files` copied in as its host files, each hashed into the manifest.
    static func bundle(_ name: String, manifest: [String: Any], files: [String: URL]) throws -> URL {
        let dir = try TestScratch.folder(name)
        var doc = manifest
        var graphs = doc["graphs"] as! [String: Any]
        for (g, entry) in graphs {
            var e = entry as! [String: Any]
            let asset = dir.appendingPathComponent(e["asset"] as! String)
            try Data("stand-in asset of \(g)".utf8).write(to: asset)
            e["sha256"] = try ContentHash.contentHash(of: asset)
            graphs[g] = e
        }
        doc["graphs"] = graphs
        var meta = doc["meta"] as? [String: Any] ?? [:], hashes: [String: String] = [:]
        for (file, source) in files {
            let target = dir.appendingPathComponent(file)
            try FileManager.default.copyItem(at: source, to: target)
            hashes[file] = try ContentHash.fileSHA256(of: target)
        }
        meta["files"] = hashes
        doc["meta"] = meta
        try JSONSerialization.data(withJSONObject: doc).write(to: dir.appendingPathComponent(Manifest.fileName))
        return dir
    }

    static func json(_ url: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
    }

    func testAnAudio8BundleOpensAsItsSpeakerAndRefusesEmptyText() throws {
        let dir = try Self.bundle("speaker-audio8", manifest: try Self.json(Audio8Fixtures.url("manifest.json")), files: [
            "audio8_host.json": Audio8Fixtures.url("audio8_host.json"),
            "tokenizer.json": Audio8Fixtures.url("text/stand_in.tokenizer.json"),
        ])
        let opened = try BundleSpeaker.open(dir, runner: RecordedRunner(manifest: try ModelBundle.open(dir).manifest, outputs: []))
        guard case .audio8(let speaker) = opened else { return XCTFail("\(opened) is not the Audio8 speaker") }
        XCTAssertEqual(try speaker.pieces("Hello there. How are you today?", voice: nil, maxFrames: 12).map(\.text),
                       ["Hello there.", "How are you today?"])
        // What every model shares, through `any Speaker`.
        let any = opened.speaker
        XCTAssertEqual(any.model, "audio8_tts")
        XCTAssertEqual(any.sampleRate, try Audio8Fixtures.tables().codec.sampleRate)
        XCTAssertThrowsError(try any.speak("  ")) { XCTAssertEqual("\($0)", "audio8_tts: the text to speak is empty") }
    }

    func testAChatterboxBundleOpensAsItsSpeaker() throws {
        let host = ChatterboxFixtures.url("bundle_files")
        var files = Dictionary(uniqueKeysWithValues: ["t3_host.npz", "flow_host.npz", "hift_host.npz", "voice_default.npz"].map {
            ($0, host.appendingPathComponent($0))
        })
        files["tokenizer.json"] = ChatterboxFixtures.url("text/stand_in.tokenizer.json")
        let dir = try Self.bundle("speaker-chatterbox", manifest: try Self.json(ChatterboxFixtures.url("manifest.json")), files: files)
        let opened = try BundleSpeaker.open(dir, runner: RecordedRunner(manifest: try ModelBundle.open(dir).manifest, outputs: []))
        guard case .chatterbox(let speaker) = opened else { return XCTFail("\(opened) is not the Chatterbox speaker") }
        XCTAssertEqual(speaker.textBudget, 60)
        XCTAssertEqual(opened.speaker.sampleRate, 24000)
        XCTAssertThrowsError(try opened.speaker.speak("")) { XCTAssertEqual("\($0)", "chatterbox: the text is empty; give it something to say") }
    }

    func testAKokoroBundleIsReadAsKokoroAndOtherModelsAreRefused() throws {
        // Kokoro's route: a manifest naming kokoro whose bundle lacks voices.npz is refused by
        // the Kokoro host files' loader, by that file's name.
        let kokoro: [String: Any] = [
            "format": Manifest.format, "model": "kokoro", "precision": "fp32",
            "graphs": Dictionary(uniqueKeysWithValues: KokoroPipeline.graphs.map {
                ($0, ["asset": "\($0).aimodel", "precision": "fp32", "sha256": "", "functions": [String: Any](),
                      "meta": ["buckets": [["T": 16, "L": 64]]]] as [String: Any])
            }),
        ]
        let dir = try Self.bundle("speaker-kokoro", manifest: kokoro, files: [
            "vocab.json": KokoroFixtures.url("vocab.json"), "host_source.npz": KokoroFixtures.url("source/host_source.npz"),
        ])
        let runner = RecordedRunner(manifest: try ModelBundle.open(dir).manifest, outputs: [])
        XCTAssertThrowsError(try BundleSpeaker.open(dir, runner: runner)) { XCTAssertTrue("\($0)".contains("'voices.npz'"), "\($0)") }
        // The toolkit's fixture bundle is no speaking model.
        let other = FixtureFolder().url("bundle")
        XCTAssertThrowsError(try BundleSpeaker.open(other, runner: runner)) { e in
            XCTAssertTrue("\(e)".hasSuffix("model 'swift-fixture' does not speak (kokoro, chatterbox, chatterbox_turbo and audio8_tts do)"), "\(e)")
        }
    }
}
