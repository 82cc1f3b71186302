import Foundation
import VoxportCore
import VoxportHost
import VoxportTestSupport

/// `Fixtures/kokoro/`, written by `conversion/kokoro/swift_fixtures.py` from the Python host.
enum KokoroFixtures {
    static let folder = FixtureFolder("kokoro")

    static func url(_ rel: String) -> URL { folder.url(rel) }
    static func f32(_ rel: String) throws -> [Float] { try folder.f32(rel) }
    static func json<T: Decodable>(_ type: T.Type, _ rel: String) throws -> T { try folder.json(T.self, rel) }
    static func vocab() throws -> KokoroVocab { try KokoroVocab.load(url("vocab.json")) }

    /// `swift_fixtures.formula_pack(k)`: ((131 i + 17 j + 1009 k) mod 2003) / 2003 - 0.5.
    static func formulaPack(_ k: Int) throws -> VoicePack {
        var v = [Float](repeating: 0, count: VoicePack.rows * VoicePack.styleDim)
        for i in 0..<VoicePack.rows {
            for j in 0..<VoicePack.styleDim {
                let m = (131 * i + 17 * j + 1009 * k) % 2003
                v[i * VoicePack.styleDim + j] = Float(Double(m) / 2003.0 - 0.5)
            }
        }
        return try VoicePack(values: v)
    }
}

struct TextFixture: Decodable {
    struct ChunkCase: Decodable {
        let text: String?
        let phonemes: String
        let ids: [Int32]
    }
    struct Sentence: Decodable {
        let text: String
        let chunks: [ChunkCase]
    }
    struct IdsCase: Decodable {
        let phonemes: String
        let ids: [Int32]
        let n_phonemes: Int
        let dropped: [String]
        let warning: String?
    }
    struct Split: Decodable {
        let max_ids: Int
        let chunks: [ChunkCase]
    }
    let sentences: [Sentence]
    let phonemes: [IdsCase]
    let split_text: String
    let splits: [Split]
}

struct VoicesFixture: Decodable {
    struct Case: Decodable {
        let spec: String
        let n_phonemes: Int
        let row: String
    }
    let packs: [String]
    let cases: [Case]
}

struct DurationsFixture: Decodable {
    struct Case: Decodable {
        let speed: Double
        let pred_dur: [Int]
    }
    struct Padded: Decodable {
        let pred_dur: [Int]
        let tokens: Int
        let frames: Int
        let aln: String
        let frame_mask: String
    }
    let durations: String
    let cases: [Case]
    let padded: Padded
}

struct SourceFixture: Decodable {
    let F0: String
    let l_linear_weight: String
    let l_linear_bias: String
    let rand_ini: String
    let sine_noise: String
    let phase: String
    let excitation: String
    let har: String
    let har_shape: [Int]
    let samples: Int
}

struct PipelineFixture: Decodable {
    struct Call: Decodable {
        let graph: String
        let function: String
    }
    struct Chunk: Decodable {
        let phonemes: String
        let ids: [Int32]
        let pred_dur: [Int]
        let calls: [Call]
        let audio_samples: Int
    }
    let phonemes: String
    let voice_pack: Int
    let speed: Double
    let buckets: [String: [[String: Int]]]
    let chunks: [Chunk]
    let audio: String
    let audio_samples: Int
}

/// max |a - b| / max |b|.
func relativeError(_ a: [Float], _ b: [Float]) -> Double {
    precondition(a.count == b.count, "length \(a.count) != \(b.count)")
    let scale = b.map { abs(Double($0)) }.max() ?? 0
    let err = zip(a, b).map { abs(Double($0) - Double($1)) }.max() ?? 0
    return scale == 0 ? err : err / scale
}

func bitwiseMismatches(_ a: [Float], _ b: [Float]) -> [Int] {
    Array(zip(a, b).enumerated().filter { $0.element.0.bitPattern != $0.element.1.bitPattern }.map(\.offset).prefix(5))
}

/// `har` rows [2 * bins, frames]: magnitudes within `tol` relative, phases modulo 2 pi where
/// the magnitude is above 1e-3 of the largest (elsewhere the angle is rounding noise).
func harError(_ got: [Float], _ want: [Float], bins: Int, frames: Int) -> (magnitude: Double, phase: Double) {
    let n = bins * frames
    let mag = relativeError(Array(got[..<n]), Array(want[..<n]))
    let floor = (want[..<n].max() ?? 0) * 1e-3
    var worst = 0.0
    for i in 0..<n where want[i] > floor {
        worst = max(worst, abs(remainder(Double(got[n + i]) - Double(want[n + i]), 2 * .pi)))
    }
    return (mag, worst)
}
