import Foundation
import XCTest
import VoxportCore

final class ManifestTests: XCTestCase {
    struct Expect: Decodable {
        let format: String
        let manifest_name: String
        let content_hash: [String: String]
        let file_sha256: [String: String]
    }

    private func manifestData() throws -> Data { try Fixtures.data("bundle/manifest.json") }

    func testDecodesWhatBundleWriterWrote() throws {
        let expect = try Fixtures.decode(Expect.self, "bundle_expect.json")
        XCTAssertEqual(Manifest.format, expect.format)
        XCTAssertEqual(Manifest.fileName, expect.manifest_name)
        let m = try Manifest.decode(try manifestData())
        XCTAssertEqual(m.format, "voxport-bundle/1")
        XCTAssertEqual(m.model, "swift-fixture")
        XCTAssertEqual(m.precision, "fp32")
        XCTAssertEqual(m.weightsSHA256, String(repeating: "ab", count: 32))
        XCTAssertEqual(Set(m.graphs.keys), ["scale", "acc"])
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: m.graphs.values.map { ($0.asset, $0.sha256) }), expect.content_hash)
        XCTAssertEqual(m.files, expect.file_sha256)
        XCTAssertEqual(m.config["sample_rate"], .int(24000))
        XCTAssertEqual(m.meta["note"]?.stringValue, "fixture for ios/ (VoxportKit)")
        XCTAssertEqual(m.packages["numpy"].flatMap { $0 }?.isEmpty, false)

        let scale = m.graphs["scale"]!
        XCTAssertEqual(scale.asset, "scale.asset")
        XCTAssertEqual(scale.precision, "fp32")
        XCTAssertEqual(scale.exportSeconds, 0.0)
        XCTAssertEqual(Set(scale.functions.keys), ["main_T16", "main_T32"])
        let f16 = try m.function(graph: "scale", function: "main_T16")
        XCTAssertEqual(f16.inputs, [
            TensorSpec(name: "x", shape: [1, 16], dtype: "float32"),
            TensorSpec(name: "mask", shape: [1, 16], dtype: "float32"),
        ])
        XCTAssertEqual(f16.outputs, [TensorSpec(name: "y", shape: [1, 16], dtype: "float32")])
        XCTAssertEqual(f16.states, [])
        XCTAssertEqual(f16.bucket, ["T": 16])
        XCTAssertEqual(try scale.bucketTable()?.buckets.map(\.label), ["T16", "T32"])

        let step = try m.function(graph: "acc", function: "step")
        XCTAssertEqual(step.states, [TensorSpec(name: "acc", shape: [1, 4], dtype: "float32")])
        XCTAssertEqual(step.outputs.map(\.name), ["total"])
        XCTAssertNil(step.bucket)
        XCTAssertNil(try m.graphs["acc"]!.bucketTable())
    }

    /// Every function descriptor, against the raw JSON read without the typed decoder.
    func testEveryFunctionMatchesTheRawJSON() throws {
        let raw = try JSONSerialization.jsonObject(with: try manifestData()) as! [String: Any]
        let m = try Manifest.decode(try manifestData())
        var checked = 0
        for (gname, g) in raw["graphs"] as! [String: [String: Any]] {
            for (fname, f) in g["functions"] as! [String: [String: Any]] {
                let fn = try m.function(graph: gname, function: fname)
                for (key, specs) in [("inputs", fn.inputs), ("outputs", fn.outputs), ("states", fn.states)] {
                    let list = f[key] as! [[String: Any]]
                    XCTAssertEqual(specs.map(\.name), list.map { $0["name"] as! String })
                    XCTAssertEqual(specs.map(\.shape), list.map { $0["shape"] as? [Int] })
                    XCTAssertEqual(specs.map(\.dtype), list.map { $0["dtype"] as? String })
                    checked += specs.count
                }
            }
        }
        XCTAssertEqual(checked, 9)
    }

    func testUnknownFormatVersionIsRefusedNamingBoth() throws {
        let text = String(decoding: try manifestData(), as: UTF8.self)
            .replacingOccurrences(of: "\"voxport-bundle/1\"", with: "\"voxport-bundle/2\"")
        let e = expectError { _ = try Manifest.decode(Data(text.utf8)) }
        XCTAssertEqual(e?.kind, .unsupportedFormat)
        XCTAssertTrue(e?.message.contains("'voxport-bundle/2'") == true, e?.message ?? "")
        XCTAssertTrue(e?.message.contains("reads voxport-bundle/1") == true, e?.message ?? "")
    }

    func testMissingFormatIsRefused() {
        let e = expectError { _ = try Manifest.decode(Data(#"{"model": "x"}"#.utf8)) }
        XCTAssertEqual(e?.kind, .unsupportedFormat)
        XCTAssertTrue(e?.message.contains("format none") == true, e?.message ?? "")
    }

    func testInvalidAndMalformedJSON() {
        XCTAssertEqual(expectError { _ = try Manifest.decode(Data("{".utf8)) }?.kind, .bundleIntegrity)
        let noGraphs = #"{"format": "voxport-bundle/1", "model": "x", "precision": "fp32"}"#
        let e = expectError { _ = try Manifest.decode(Data(noGraphs.utf8)) }
        XCTAssertEqual(e?.kind, .bundleIntegrity)
        XCTAssertTrue(e?.message.contains("malformed manifest") == true)
    }

    /// Free-form config/meta values keep their JSON kind (a 1 is not read as true).
    func testJSONValueKinds() throws {
        let v = try JSONDecoder().decode(JSONValue.self, from: Data(#"[1, 0, true, 1.5, "s", null, {"k": [2]}]"#.utf8))
        XCTAssertEqual(v, .array([.int(1), .int(0), .bool(true), .double(1.5), .string("s"), .null, .object(["k": .array([.int(2)])])]))
        XCTAssertEqual(v.arrayValue?[3].doubleValue, 1.5)
        XCTAssertEqual(v.arrayValue?[0].intValue, 1)
    }

    func testUnknownGraphAndFunctionUsePythonsMessages() throws {
        let m = try Manifest.decode(try manifestData())
        XCTAssertEqual(
            expectError { _ = try m.function(graph: "nope", function: "main") }?.message,
            "no graph 'nope' in this bundle (has: ['acc', 'scale'])")
        XCTAssertEqual(
            expectError { _ = try m.function(graph: "scale", function: "main") }?.message,
            "graph 'scale' has no function 'main' (has: ['main_T16', 'main_T32'])")
    }
}
