import Foundation
import XCTest
import VoxportTestSupport
import VoxportHost

/// The app's bundle picker: which folders under Documents/models are listed.
final class SpeakableBundlesTests: XCTestCase {
    /// The fixture bundle's manifest with its model replaced.
    func manifest(model: String) throws -> Data {
        var doc = try JSONSerialization.jsonObject(with: FixtureFolder("bundle").data("manifest.json")) as! [String: Any]
        doc["model"] = model
        return try JSONSerialization.data(withJSONObject: doc)
    }

    func testListsTheFoldersWhoseManifestNamesAModelThatSpeaks() throws {
        let root = try TestScratch.folder("speakable").appendingPathComponent("models")
        let fm = FileManager.default
        func folder(_ name: String, manifest: Data?) throws {
            let dir = root.appendingPathComponent(name)
            try fm.createDirectory(at: dir, withIntermediateDirectories: true)
            if let manifest { try manifest.write(to: dir.appendingPathComponent("manifest.json")) }
        }
        try folder("kokoro-fp32", manifest: try manifest(model: "kokoro"))
        try folder("audio8-fp32", manifest: try manifest(model: "audio8_tts"))
        try folder("chatterbox-int8", manifest: try manifest(model: "chatterbox"))
        try folder("a-graph-only", manifest: try manifest(model: "swift-fixture"))
        try folder("b-empty", manifest: nil)
        try folder("c-broken", manifest: Data("{not json".utf8))
        try Data("x".utf8).write(to: root.appendingPathComponent("notes.txt"))

        let entries = SpeakableBundles.list(in: root)
        XCTAssertEqual(entries.map(\.name), ["audio8-fp32", "chatterbox-int8", "kokoro-fp32"], "sorted by name, speakers only")
        XCTAssertEqual(entries.map(\.model), ["audio8_tts", "chatterbox", "kokoro"])
        XCTAssertEqual(Set(entries.map(\.precision)), ["fp32"])
        XCTAssertEqual(SpeakableBundles.list(in: root.appendingPathComponent("missing")), [], "nothing sideloaded yet")
    }

    func testEveryModelTakesText() {
        XCTAssertEqual(SpeakableBundles.inputHint(model: "kokoro"), "text")
        XCTAssertEqual(SpeakableBundles.inputHint(model: "chatterbox"), "text")
    }
}
