import Foundation
import XCTest
import VoxportCore

final class BundleVerifyTests: XCTestCase {
    struct Tamper: Decodable {
        let path: String
        let damage: String
        let message: String
    }

    struct Expect: Decodable {
        let content_hash: [String: String]
        let path_order: [String: [String]]
        let file_sha256: [String: String]
        let single_file_content_hash: String
        let tamper: [String: Tamper]
        let closed: [String: Tamper]
    }

    private let bundleURL = Fixtures.url("bundle")
    private func expect() throws -> Expect { try Fixtures.decode(Expect.self, "bundle_expect.json") }

    func testFixtureBundleVerifies() throws {
        let b = try ModelBundle.open(bundleURL)
        XCTAssertEqual(b.manifest.model, "swift-fixture")
        XCTAssertEqual(try b.assetURL(graph: "acc").lastPathComponent, "acc.asset")
        XCTAssertEqual(try b.fileURL("voices.npz").lastPathComponent, "voices.npz")
        XCTAssertEqual(expectError { _ = try b.fileURL("nope.npz") }?.kind, .user)
    }

    func testContentHashesEqualPythons() throws {
        let e = try expect()
        XCTAssertEqual(e.content_hash.count, 2)
        for (asset, digest) in e.content_hash {
            XCTAssertEqual(try ContentHash.contentHash(of: bundleURL.appendingPathComponent(asset)), digest, asset)
        }
        for (name, digest) in e.file_sha256 {
            XCTAssertEqual(try ContentHash.fileSHA256(of: bundleURL.appendingPathComponent(name)), digest, name)
        }
        // A single file hashes as its bare name, NUL, bytes, NUL.
        XCTAssertEqual(
            try ContentHash.contentHash(of: bundleURL.appendingPathComponent("table.txt")), e.single_file_content_hash)
    }

    func testFilesAreOrderedLikePythonPaths() throws {
        let e = try expect()
        for (asset, order) in e.path_order {
            XCTAssertEqual(try ContentHash.filesInPathOrder(under: bundleURL.appendingPathComponent(asset)), order, asset)
        }
        // The fixture does exercise the difference from plain string order.
        let scale = e.path_order["scale.asset"]!
        XCTAssertNotEqual(scale, scale.sorted())
    }

    func testPythonPathOrderRules() {
        XCTAssertTrue(ContentHash.pythonPathPrecedes("a/b", "a-b"))  // "a" < "a-b"; as strings "-" < "/"
        XCTAssertTrue(ContentHash.pythonPathPrecedes("a/b", "a.b"))
        XCTAssertTrue(ContentHash.pythonPathPrecedes("a-b", "a.b"))
        XCTAssertTrue(ContentHash.pythonPathPrecedes("B", "a"))  // code point order
        XCTAssertTrue(ContentHash.pythonPathPrecedes("a", "a/b"))
        XCTAssertFalse(ContentHash.pythonPathPrecedes("a/b", "a/b"))
    }

    /// Each damage Python's verify_bundle was shown, applied here, gives Python's message.
    func testDamagedBundlesAreRefusedNamingTheFile() throws {
        let e = try expect()
        XCTAssertEqual(e.tamper.count, 5)
        for (key, t) in e.tamper.sorted(by: { $0.key < $1.key }) {
            let dir = try Fixtures.scratch()
            defer { try? FileManager.default.removeItem(at: dir) }
            let copy = dir.appendingPathComponent("bundle")
            try FileManager.default.copyItem(at: bundleURL, to: copy)
            try damage(copy.appendingPathComponent(t.path), t.damage)
            XCTAssertNoThrow(try ModelBundle.open(copy, verify: false), key)
            let err = expectError { _ = try ModelBundle.open(copy) }
            XCTAssertEqual(err?.kind, .bundleIntegrity, key)
            let want = t.message.replacingOccurrences(of: "<bundle>", with: copy.standardizedFileURL.path)
            XCTAssertEqual(err?.message, want, key)
            let named = t.path.split(separator: "/").first.map(String.init)!
            XCTAssertTrue(err?.message.contains(named) == true, key)
        }
    }

    /// A bundle is a closed world: a link out of it (same bytes), a file its manifest does not
    /// list, a manifest naming `../asset`, and a manifest that is JSON but no object (a list, a
    /// string) are refused with Python's message, hashed or not.
    func testWaysOutOfTheBundleAreRefusedWithOrWithoutHashing() throws {
        let e = try expect()
        XCTAssertEqual(Set(e.closed.values.map(\.damage)), ["link", "add", "escape", "list", "string"])
        for (key, t) in e.closed.sorted(by: { $0.key < $1.key }) {
            let dir = try Fixtures.scratch()
            defer { try? FileManager.default.removeItem(at: dir) }
            let copy = dir.appendingPathComponent("bundle")
            try FileManager.default.copyItem(at: bundleURL, to: copy)
            try breakOut(copy, t.path, t.damage)
            let want = t.message.replacingOccurrences(of: "<bundle>", with: copy.standardizedFileURL.path)
            for verify in [false, true] {
                let err = expectError { _ = try ModelBundle.open(copy, verify: verify) }
                XCTAssertEqual(err?.kind, .bundleIntegrity, "\(key) verify=\(verify)")
                XCTAssertEqual(err?.message, want, "\(key) verify=\(verify)")
            }
        }
        XCTAssertTrue(Manifest.isPlainName("acc.asset"))
        for bad in ["", ".", "..", "../x", "/etc", "a\\b", "a\u{0}b"] {
            XCTAssertFalse(Manifest.isPlainName(bad), bad)
        }
    }

    /// `conversion.fixtures.bundle._break_out`: link to the same bytes moved beside the
    /// bundle, add an unlisted file, make the manifest name the asset `../<path>`, or replace
    /// the manifest with a JSON list or string.
    private func breakOut(_ bundle: URL, _ rel: String, _ how: String) throws {
        let fm = FileManager.default
        let url = bundle.appendingPathComponent(rel)
        switch how {
        case "link":
            let outside = bundle.deletingLastPathComponent().appendingPathComponent("outside.bin")
            try fm.moveItem(at: url, to: outside)
            try fm.createSymbolicLink(at: url, withDestinationURL: outside)
        case "add":
            try Data("not in the manifest\n".utf8).write(to: url)
        case "list", "string":
            try Data((how == "list" ? "[\"voxport-bundle/1\"]\n" : "\"voxport-bundle/1\"\n").utf8).write(to: url)
        default:
            let manifestURL = bundle.appendingPathComponent(Manifest.fileName)
            var doc = try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as! [String: Any]
            var graphs = doc["graphs"] as! [String: Any]
            for (name, value) in graphs {
                var g = value as! [String: Any]
                if g["asset"] as? String == rel { g["asset"] = "../\(rel)" }
                graphs[name] = g
            }
            doc["graphs"] = graphs
            try JSONSerialization.data(withJSONObject: doc).write(to: manifestURL)
        }
    }

    func testMissingBundleAndMissingManifest() throws {
        let dir = try Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        XCTAssertEqual(expectError { _ = try ModelBundle.open(dir.appendingPathComponent("absent")) }?.kind, .bundleNotFound)
        let e = expectError { _ = try ModelBundle.open(dir) }
        XCTAssertEqual(e?.kind, .bundleNotFound)
        XCTAssertTrue(e?.message.hasSuffix("has no manifest.json: not a voxport bundle") == true)
    }

    func testUnknownFormatIsRefusedBeforeHashing() throws {
        let dir = try Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let copy = dir.appendingPathComponent("bundle")
        try FileManager.default.copyItem(at: bundleURL, to: copy)
        let manifest = copy.appendingPathComponent("manifest.json")
        let text = try String(contentsOf: manifest, encoding: .utf8)
            .replacingOccurrences(of: "voxport-bundle/1", with: "voxport-bundle/9")
        try text.write(to: manifest, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(at: copy.appendingPathComponent("acc.asset"))
        XCTAssertEqual(expectError { _ = try ModelBundle.open(copy) }?.kind, .unsupportedFormat)
    }

    /// The damage `conversion.fixtures.bundle._damage` applies: flip the middle byte, keep the
    /// first half, delete.
    private func damage(_ url: URL, _ how: String) throws {
        if how == "delete" {
            try FileManager.default.removeItem(at: url)
            return
        }
        var bytes = [UInt8](try Data(contentsOf: url))
        if how == "flip" {
            bytes[bytes.count / 2] ^= 0xFF
        } else {
            bytes = Array(bytes.prefix(bytes.count / 2))
        }
        try Data(bytes).write(to: url)
    }
}
