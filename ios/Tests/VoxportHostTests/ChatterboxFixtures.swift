import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportTestSupport

/// `Fixtures/chatterbox/`, written by `conversion/chatterbox/swift_fixtures.py` from the Python host.
enum ChatterboxFixtures {
    static let folder = FixtureFolder("chatterbox")

    static func url(_ rel: String) -> URL { folder.url(rel) }
    static func json<T: Decodable>(_ type: T.Type, _ rel: String) throws -> T { try folder.json(T.self, rel) }
    static func npz(_ rel: String) throws -> NpzArchive { try folder.npz(rel) }
    static func manifest() throws -> Manifest { try folder.manifest() }

    /// The bundle's host files as the fixture writer saved them.
    static func files() throws -> ChatterboxBundleFiles {
        let dir = url("bundle_files")
        return ChatterboxBundleFiles(
            t3: try T3Tables.load(dir.appendingPathComponent(T3Tables.fileName)),
            flow: try FlowTables.load(dir.appendingPathComponent(FlowTables.fileName)),
            hift: try HiftTables.load(dir.appendingPathComponent(HiftTables.fileName)),
            defaultVoice: try ChatterboxVoice.load(dir.appendingPathComponent(ChatterboxVoice.defaultFileName)))
    }

    static func results() throws -> NpzArchive { try npz("pipeline/results.npz") }
}

struct ChatterboxSamplingFixture: Decodable {
    struct Case: Decodable {
        let order: String
        let temperature: Float
        let top_k: Int?
        let top_p: Float?
        let min_p: Float?
        let repetition_penalty: Float?
        let cfg_weight: Float?
        let token: Int
        let kept: Int

        var config: SamplingConfig {
            let orders: [String: SamplingOrder] = [
                "chatterbox": .chatterbox, "hf": SamplingOrder(), "raw": SamplingOrder(filterOnRawScores: true),
                "whole": SamplingOrder(minPBeforeTopP: true, topPOverWholeVocab: true),
                "crossing": SamplingOrder(topPDropsCrossingToken: true),
            ]
            return SamplingConfig(temperature: temperature, topK: top_k, topP: top_p, minP: min_p,
                                  repetitionPenalty: repetition_penalty ?? 1, cfgWeight: cfg_weight, order: orders[order]!)
        }
    }
    let vocab: Int
    let cases: [Case]
}

struct ChatterboxDropFixture: Decodable {
    struct Case: Decodable {
        let tokens: [Int]
        let speech: [Int]
    }
    let cases: [Case]
}

struct ChatterboxPipelineFixture: Decodable {
    let text_ids: [Int32]
    let seed: Int
    let steps: Int
    let tokens: [Int]
    let speech_tokens: [Int]
    let stopped: Bool
    let t3_steps: Int
    let calls: [String]
    let audio_samples: Int
}

/// The draws the Python pipeline made from its seed (recorded in `pipeline/results.npz`).
struct RecordedChatterboxDraws: ChatterboxDraws {
    let uniformRows: [[Float]]
    let noise: [Float]
    let hift: HiftDraws

    init(_ z: NpzArchive) throws {
        let u = try z.array("uniforms")
        let all = try u.float32(), v = u.shape[1]
        uniformRows = (0..<u.shape[0]).map { Array(all[($0 * v)..<(($0 + 1) * v)]) }
        noise = try z.array("noise").float32()
        hift = HiftDraws(phase: try z.array("phase").float32(), sineNoise: try z.array("sine_noise").float32())
    }

    func uniforms(chunk: Int) -> T3Uniforms { RecordedUniforms(uniformRows) }
    func noise(chunk: Int, frames: Int) -> [Float] { noise }
    func hift(chunk: Int, samples: Int, harmonics: Int) -> HiftDraws { hift }
}

/// max |a - b| / max |b| (the Kokoro tests' `relativeError`, named apart).
func chatterboxRelativeError(_ a: [Float], _ b: [Float]) -> Double {
    precondition(a.count == b.count, "length \(a.count) != \(b.count)")
    let scale = b.map { abs(Double($0)) }.max() ?? 0
    let err = zip(a, b).map { abs(Double($0) - Double($1)) }.max() ?? 0
    return scale == 0 ? err : err / scale
}
