import Foundation
import XCTest
import VoxportTestSupport
import VoxportBench
import VoxportCore

/// What `voxport-bench` refuses before it loads anything, and how it reads its variables.
final class BenchEnvironmentTests: XCTestCase {
    func error(_ env: [String: String]) -> String {
        do {
            _ = try BenchEnvironment(env)
            return "(no error)"
        } catch {
            return "\(error)"
        }
    }

    func testAnUnknownBenchListsTheValidOnes() {
        let message = error(["VP_BENCH": "kokoro.talk", "VP_BUNDLE": "/b"])
        XCTAssertTrue(message.hasPrefix("unknown VP_BENCH 'kokoro.talk': choose one of "), message)
        for name in ["kokoro.speak", "chatterbox.t3", "chatterbox.estimator", "chatterbox.vocoder", "chatterbox.speak",
                     "chatterbox_turbo.t3", "chatterbox_turbo.estimator", "chatterbox_turbo.vocoder", "chatterbox_turbo.speak",
                     "chatterbox_turbo.text", "audio8.frame", "audio8.codec", "audio8.speak"] {
            XCTAssertTrue(message.contains(name), "\(name) missing from: \(message)")
        }
        XCTAssertTrue(error([:]).hasPrefix("VP_BENCH is not set: choose one of "))
    }

    func testBadValuesAreNamed() {
        let base = ["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/b"]
        XCTAssertEqual(error(["VP_BENCH": "kokoro.speak"]), "VP_BUNDLE is not set: give a bundle folder (`voxport export MODEL` writes one)")
        XCTAssertTrue(error(base.merging(["VP_RUNNER": "gpu"]) { $1 }).hasPrefix("unknown VP_RUNNER 'gpu': choose one of coreai, worker, replay"))
        XCTAssertTrue(error(base.merging(["VP_UNITS": "all"]) { $1 }).hasPrefix("unknown VP_UNITS 'all'"))
        XCTAssertEqual(error(base.merging(["VP_PASSES": "-1"]) { $1 }), "VP_PASSES='-1' is not a whole number ≥ 0")
        XCTAssertTrue(error(base.merging(["VP_RUNNER": "replay"]) { $1 }).hasPrefix("VP_RUNNER=replay needs VP_REPLAY"))
        XCTAssertTrue(error(base.merging(["VP_TOKENS": "1, x"]) { $1 }).hasPrefix("VP_TOKENS is neither JSON nor ids"))
    }

    func testTokensInEveryFormTheToolsPrint() throws {
        let base = ["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/b"]
        func tokens(_ t: String) throws -> [[Int]]? { try BenchEnvironment(base.merging(["VP_TOKENS": t]) { $1 }).tokens }
        XCTAssertEqual(try tokens(#"{"model": "m", "chunks": [{"ids": [1, 2]}, {"ids": [3]}]}"#), [[1, 2], [3]])
        XCTAssertEqual(try tokens("[[4, 5], [6]]"), [[4, 5], [6]])
        XCTAssertEqual(try tokens("[7, 8]"), [[7, 8]])
        XCTAssertEqual(try tokens("9, 10 11"), [[9, 10, 11]])
    }

    func testRelativePathsResolveInsideTheAppsDocuments() throws {
        let docs = URL(fileURLWithPath: "/var/mobile/Documents")
        let env = try BenchEnvironment(
            ["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "models/kokoro-fp32", "VP_OUT": "bench/k"], base: docs)
        XCTAssertEqual(env.bundle.path, "/var/mobile/Documents/models/kokoro-fp32")
        XCTAssertEqual(env.out.path, "/var/mobile/Documents/bench/k")
        let absolute = try BenchEnvironment(["VP_BENCH": "kokoro.speak", "VP_BUNDLE": "/tmp/b"], base: docs)
        XCTAssertEqual(absolute.bundle.path, "/tmp/b")
    }

    /// A bench of one model over another model's bundle is refused before a runner starts.
    func testABundleOfAnotherModelIsRefused() async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/bundle")
        let manifest = try Manifest.decode(Data(contentsOf: fixtures.appendingPathComponent("manifest.json")))
        XCTAssertNotEqual(manifest.model, "kokoro")
        let env = try BenchEnvironment([
            "VP_BENCH": "kokoro.speak", "VP_BUNDLE": fixtures.path, "VP_PHONEMES": "hˈI",
            "VP_OUT": FileManager.default.temporaryDirectory.appendingPathComponent("vp-mismatch-\(getpid())").path,
        ])
        await assertThrowsAsync({ try await BenchDriver.run(env) }) { e in
            XCTAssertEqual(
                "\(e)", "VP_BUNDLE \(fixtures.path) holds a \(manifest.model) bundle; VP_BENCH=kokoro.speak needs a kokoro one")
        }
    }
}
