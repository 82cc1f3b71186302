import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportTestSupport

/// `Fixtures/chatterbox_turbo/{t3,pipeline}/`, written by
/// `conversion/chatterbox_turbo/swift_fixtures.py` from the Python host (`voxport fixtures swift`).
enum ChatterboxTurboFixtures {
    static let root = "ios/Tests/Fixtures/chatterbox_turbo"
    static let folder = FixtureFolder(inRepo: root + "/t3")
    /// One whole chunk of `TurboPipeline.synthesize` over a recording stand-in session.
    static let pipeline = FixtureFolder(inRepo: root + "/pipeline")

    static func tables() throws -> ChatterboxTurboT3Tables {
        try ChatterboxTurboT3Tables.load(folder.url(ChatterboxTurboT3Tables.fileName))
    }
    static func replay() throws -> ReplayRunner { try ReplayRunner(recording: folder.url("recording")) }
    static func caseArrays() throws -> NpzArchive { try folder.npz("case.npz") }
    static func caseJSON() throws -> ChatterboxTurboCase { try folder.json(ChatterboxTurboCase.self, "case.json") }

    static func cond(_ z: NpzArchive) throws -> TurboCond {
        TurboCond(speakerEmb: try z.array("speaker_emb").float32(), promptTokens: try z.array("prompt_tokens").int64().map { Int($0) })
    }

    /// The pipeline fixture's bundle host files as the writer saved them.
    static func pipelineFiles() throws -> ChatterboxTurboBundleFiles {
        let dir = pipeline.url("bundle_files")
        return ChatterboxTurboBundleFiles(
            t3: try ChatterboxTurboT3Tables.load(dir.appendingPathComponent(ChatterboxTurboT3Tables.fileName)),
            flow: try FlowTables.load(dir.appendingPathComponent(FlowTables.fileName)),
            hift: try HiftTables.load(dir.appendingPathComponent(HiftTables.fileName)),
            defaultVoice: try ChatterboxTurboVoice.load(dir.appendingPathComponent(ChatterboxTurboVoice.defaultFileName)))
    }
    static func pipelineReplay() throws -> ReplayRunner {
        try ReplayRunner(recording: pipeline.url("recording"), manifest: pipeline.manifest())
    }

    /// [rows, V] -> one row per draw.
    static func rows(_ a: NpyArray) throws -> [[Float]] {
        let all = try a.float32(), v = a.shape[1]
        return (0..<a.shape[0]).map { Array(all[($0 * v)..<(($0 + 1) * v)]) }
    }
}

struct ChatterboxTurboCase: Decodable {
    struct Knobs: Decodable {
        let temperature: Float
        let top_k: Int
        let top_p: Float
        let repetition_penalty: Float
    }
    let text_ids: [Int]
    let max_new_tokens: Int
    let prefill_buckets: [Int]
    let kv_length: Int
    let sampling: Knobs
    let tokens: [Int]
    let stopped: Bool
    let draws: Int
    let calls: [String]

    var config: SamplingConfig {
        .chatterboxTurbo(temperature: sampling.temperature, topK: sampling.top_k, topP: sampling.top_p,
                         repetitionPenalty: sampling.repetition_penalty)
    }
}

struct ChatterboxTurboSamplingFixture: Decodable {
    struct Case: Decodable {
        let temperature: Float
        let top_k: Int
        let top_p: Float
        let repetition_penalty: Float
        let kept: Int

        var config: SamplingConfig {
            .chatterboxTurbo(temperature: temperature, topK: top_k, topP: top_p, repetitionPenalty: repetition_penalty)
        }
    }
    let vocab: Int
    let cases: [Case]
}
