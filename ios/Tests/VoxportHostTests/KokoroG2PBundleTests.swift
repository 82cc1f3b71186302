import Foundation
import VoxportCore
import VoxportHost
import VoxportTestSupport
import VoxportText
import XCTest

/// misaki's G2P read from a Kokoro bundle's `g2p/`: `conversion/kokoro/g2p_bundle_case.py` (a
/// Python child) writes a bundle as the export writes its `g2p/`, one exported before it (no
/// `g2p/`), and misaki's own phonemes for a few sentences (the expected side: nothing comes
/// from the Swift code or the written files).
final class KokoroG2PBundleTests: XCTestCase {
    nonisolated(unsafe) static var cached: URL?

    static func load() throws -> URL {
        if let out = cached { return out }
        let out = try TestScratch.folder("kokoro-g2p-bundle-case")
        try PythonChild.run(PythonChild.repo.appendingPathComponent("conversion/kokoro/g2p_bundle_case.py"), [out.path])
        cached = out
        return out
    }

    /// The verified bundle's G2P speaks as misaki does, and `MisakiEnglish(folder:)` on the
    /// bundle's `g2p/` is the same reader.
    func testBundleG2PEqualsMisaki() throws {
        let out = try Self.load()
        let bundle = try ModelBundle.open(out.appendingPathComponent("bundle"))  // hashes g2p/ too
        let start = Date()
        let english = try MisakiEnglish(bundle: bundle)
        print("[kokoro-g2p] MisakiEnglish(bundle:) loaded in \(String(format: "%.3f", Date().timeIntervalSince(start))) s")
        let rows = try JSONDecoder().decode([[String]].self, from: Data(contentsOf: out.appendingPathComponent("phonemes.json")))
        XCTAssertEqual(rows.count, 3)
        let byFolder = try MisakiEnglish(folder: bundle.url.appendingPathComponent(KokoroBundleFiles.g2pFolder))
        for row in rows {
            let got = try english.phonemize(row[0], fallback: nil).phonemes
            XCTAssertEqual(Array(got.unicodeScalars), Array(row[1].unicodeScalars), "\(row[0]): swift \(got) misaki \(row[1])")
            XCTAssertEqual(Array(try byFolder.phonemize(row[0], fallback: nil).phonemes.unicodeScalars), Array(got.unicodeScalars))
        }
    }

    /// A bundle exported before it carried `g2p/` is refused in one line naming the fix, by the
    /// bundle initializer and by the folder one.
    func testBundleWithoutG2PNamesTheReExport() throws {
        let old = try ModelBundle.open(try Self.load().appendingPathComponent("old"))
        for attempt in [
            { _ = try MisakiEnglish(bundle: old) },
            { _ = try MisakiEnglish(folder: old.url.appendingPathComponent(KokoroBundleFiles.g2pFolder)) },
        ] {
            XCTAssertThrowsError(try attempt()) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("voxport export kokoro --overwrite") && !text.contains("\n"), text)
            }
        }
    }

    /// Every file of `g2p/` is covered by the manifest's hash: one changed byte deep in it is
    /// refused at open, naming the folder.
    func testAChangedG2PFileFailsVerification() throws {
        let copy = try TestScratch.folder("kokoro-g2p-tampered").appendingPathComponent("bundle")
        try FileManager.default.copyItem(at: try Self.load().appendingPathComponent("bundle"), to: copy)
        XCTAssertNoThrow(try ModelBundle.open(copy))
        let file = copy.appendingPathComponent("g2p/lexicon/us_silver.tsv")
        var bytes = [UInt8](try Data(contentsOf: file))
        bytes[bytes.count / 2] ^= 1
        try Data(bytes).write(to: file)
        XCTAssertThrowsError(try ModelBundle.open(copy)) { error in
            XCTAssertEqual((error as? VoxportError)?.kind, .bundleIntegrity)
            XCTAssertTrue("\(error)".contains("file g2p is missing or modified"), "\(error)")
        }
        XCTAssertNoThrow(try ModelBundle.open(copy, verify: false))  // not hashed: still closed
    }
}
