import Foundation
import VoxportCore
import VoxportTestSupport

/// `dsp.json` and its raw float32 arrays, written by `conversion/fixtures/dsp.py` with torch.
enum Fixtures {
    static let folder = FixtureFolder()

    static func f32(_ rel: String) throws -> [Float] { try folder.f32(rel) }
    static func dsp() throws -> DSPFixtures { try folder.json(DSPFixtures.self, "dsp.json") }
}

struct DSPFixtures: Decodable {
    struct Hann: Decodable {
        let n: Int
        let periodic: Bool
        let file: String
        let torch_float32_file: String
    }

    struct STFTCase: Decodable {
        let name: String
        let n_fft: Int
        let hop: Int
        let win_length: Int
        let length: Int
        let bins: Int
        let frames: Int
        let signal: String
        let window: String
        let real: String
        let imag: String
        let magnitude: String
        let phase: String
    }

    struct ISTFTCase: Decodable {
        let name: String
        let n_fft: Int
        let hop: Int
        let win_length: Int
        let length: Int?
        let bins: Int
        let frames: Int
        let window: String
        let real: String
        let imag: String
        let output: String
        let output_length: Int
    }

    struct MapCase: Decodable {
        let name: String
        let length: Int
        let scale_factor: Double?
        let output_length: Int?
        let input: String
        let output: String
    }

    let hann: [Hann]
    let stft: [STFTCase]
    let istft: [ISTFTCase]
    let interpolate: [MapCase]
    let cumsum: [MapCase]
}

/// max |a - b| / max |b|: the "relative" error the DSP tolerances are stated in.
func relativeError(_ a: [Float], _ b: [Float]) -> Double {
    precondition(a.count == b.count, "length \(a.count) != \(b.count)")
    let scale = b.map { abs(Double($0)) }.max() ?? 0
    let err = zip(a, b).map { abs(Double($0) - Double($1)) }.max() ?? 0
    return scale == 0 ? err : err / scale
}

/// Indices where two arrays differ bitwise (first few), for failure messages.
func bitwiseMismatches(_ a: [Float], _ b: [Float]) -> [Int] {
    Array(zip(a, b).enumerated().filter { $0.element.0.bitPattern != $0.element.1.bitPattern }.map(\.offset).prefix(5))
}
