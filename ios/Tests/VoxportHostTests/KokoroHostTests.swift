import Foundation
import Synchronization
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner

/// Answers each graph call with what the Python pipeline's recording session returned, and
/// keeps the inputs the Swift host sent, to hold against the Python host's.
final class RecordedRunner: GraphRunner {
    typealias Call = (graph: String, function: String, inputs: [String: Tensor])
    let manifest: Manifest
    private struct Recording {
        var outputs: [[String: Tensor]]
        var calls: [Call] = []
    }
    private let recording: Mutex<Recording>
    var calls: [Call] { recording.withLock { $0.calls } }

    init(manifest: Manifest, outputs: [[String: Tensor]]) {
        self.manifest = manifest
        recording = Mutex(Recording(outputs: outputs))
    }

    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        try recording.withLock {
            $0.calls.append((graph, function, inputs))
            guard !$0.outputs.isEmpty else { throw VoxportError(.user, "no recorded call left") }
            return $0.outputs.removeFirst()
        }
    }

    func resetState(graph: String, state: String) async throws {}
    func close() async {}
}

/// The draws the Python pipeline made, by chunk seed.
struct RecordedNoise: SourceNoise {
    let draws: [Int: SourceDraws]
    func draws(frames: Int, seed: Int) -> SourceDraws { draws[seed]! }
}

final class KokoroHostTests: XCTestCase {
    static func manifest(_ buckets: [String: [[String: Int]]]) throws -> Manifest {
        var graphs: [String: Any] = [:]
        for (g, table) in buckets {
            graphs[g] = ["asset": "\(g).aimodel", "precision": "fp32", "sha256": "", "functions": [String: Any](),
                         "meta": ["buckets": table]]
        }
        let doc: [String: Any] = ["format": Manifest.format, "model": "kokoro", "precision": "fp32", "graphs": graphs]
        return try Manifest.decode(try JSONSerialization.data(withJSONObject: doc))
    }

    func testHostDrivesTheGraphsAsThePythonPipeline() async throws {
        let fx = try KokoroFixtures.json(PipelineFixture.self, "pipeline.json")
        var outputs: [[String: Tensor]] = [], inputs: [[String: Tensor]] = [], noise: [Int: SourceDraws] = [:]
        for (i, c) in fx.chunks.enumerated() {
            for call in c.calls {
                outputs.append(try NpzArchive.load(KokoroFixtures.url("pipeline/chunk\(i)_\(call.graph)_out.npz")).arrays)
                inputs.append(try NpzArchive.load(KokoroFixtures.url("pipeline/chunk\(i)_\(call.graph)_in.npz")).arrays)
            }
            let z = try NpzArchive.load(KokoroFixtures.url("pipeline/chunk\(i)_noise.npz"))
            noise[i] = SourceDraws(randIni: try z.array("rand_ini").float32(), sineNoise: try z.array("sine_noise").float32())
        }
        let runner = RecordedRunner(manifest: try Self.manifest(fx.buckets), outputs: outputs)
        let sourceFx = try KokoroFixtures.json(SourceFixture.self, "source.json")
        let source = try HarmonicSource(
            weight: try KokoroFixtures.f32(sourceFx.l_linear_weight), bias: try KokoroFixtures.f32(sourceFx.l_linear_bias)[0])
        let host = try KokoroPipeline(runner: runner, vocab: try KokoroFixtures.vocab(), source: source)
        let chunks = try host.chunks(fx.phonemes)
        XCTAssertEqual(chunks.map(\.phonemes), fx.chunks.map(\.phonemes))
        XCTAssertEqual(chunks.map(\.ids), fx.chunks.map(\.ids))

        let (audio, results) = try await host.speak(
            fx.phonemes, voice: try KokoroFixtures.formulaPack(fx.voice_pack), speed: fx.speed,
            noise: RecordedNoise(draws: noise))
        XCTAssertEqual(results.map(\.predDur), fx.chunks.map(\.pred_dur))
        let calls = runner.calls
        XCTAssertEqual(calls.map(\.function), fx.chunks.flatMap { $0.calls.map(\.function) })
        XCTAssertEqual(calls.count, inputs.count)
        for (call, want) in zip(calls, inputs) {
            XCTAssertEqual(Set(call.inputs.keys), Set(want.keys), call.function)
            for (name, w) in want {
                let g = call.inputs[name]!
                XCTAssertEqual(g.shape, w.shape, "\(call.function).\(name)")
                if name == "har" {
                    let (bins, frames) = (w.shape[1] / 2, w.shape[2])
                    let err = harError(try g.float32(), try w.float32(), bins: bins, frames: frames)
                    XCTAssertLessThanOrEqual(err.magnitude, 1e-5, call.function)
                    XCTAssertLessThanOrEqual(err.phase, 1e-3, call.function)
                } else {
                    XCTAssertEqual(g, w, "\(call.function).\(name) is exact")
                }
            }
        }
        let want = try KokoroFixtures.f32(fx.audio)
        XCTAssertEqual(audio.count, fx.audio_samples)
        XCTAssertEqual(bitwiseMismatches(audio, want), [])
        let seconds = Double(audio.count) / Double(KokoroAudio.sampleRate)
        let hostMs = results.map(\.hostMilliseconds).reduce(0, +)
        print(String(format: "kokoro swift host: %.1f ms host steps for %.2f s of audio (%.1f ms per audio second)",
                     hostMs, seconds, hostMs / seconds))
    }

    func testEmptyPhonemesAreAnError() async throws {
        let fx = try KokoroFixtures.json(PipelineFixture.self, "pipeline.json")
        let runner = RecordedRunner(manifest: try Self.manifest(fx.buckets), outputs: [])
        let host = try KokoroPipeline(
            runner: runner, vocab: try KokoroFixtures.vocab(), source: try HarmonicSource(weight: [Float](repeating: 0, count: 9), bias: 0))
        var warnings: [String] = []
        host.onWarning = { warnings.append($0) }
        for bad in ["", "   "] {
            XCTAssertThrowsError(try host.chunks(bad)) { e in
                XCTAssertEqual((e as? VoxportError)?.kind, .user)
                XCTAssertTrue("\(e)".contains("empty"))
            }
        }
        let pack = try KokoroFixtures.formulaPack(0)
        await assertThrowsAsync({ try await host.speak(".,", voice: pack, noise: SplitMixNoise()) }) { e in
            XCTAssertTrue("\(e)".contains("nothing to say"))
        }
        XCTAssertEqual(try host.chunks("həlˈO ❓").map(\.ids).count, 1)
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings[0].contains("'❓' (U+2753) x1"))
        XCTAssertTrue(runner.calls.isEmpty)
    }

    func testBundleFilesAreReadThroughTheManifest() throws {
        let fx = try KokoroFixtures.json(SourceFixture.self, "source.json")
        let loaded = try HarmonicSource.load(KokoroFixtures.url("source/host_source.npz"))
        XCTAssertEqual(loaded.weight, try KokoroFixtures.f32(fx.l_linear_weight))
        XCTAssertEqual(loaded.bias, try KokoroFixtures.f32(fx.l_linear_bias)[0])
        // A bundle without the Kokoro host files is refused by file name.
        let other = try ModelBundle.open(FixtureFolder().url("bundle"))
        XCTAssertThrowsError(try KokoroBundleFiles.load(other)) { e in
            XCTAssertTrue("\(e)".contains("vocab.json"), "\(e)")
        }
    }
}
