import Foundation
import XCTest
import VoxportCore
import VoxportHost
import VoxportRunner

/// What the Speaker parity tests share: reading a stream, a multi-chunk Chatterbox recording,
/// and holding a wav the Python CLI wrote against Swift audio.
enum SpeakerParity {
    /// Every chunk of the stream, in order.
    static func collect(_ stream: AsyncThrowingStream<SpeechChunk, any Error>) async throws -> [SpeechChunk] {
        var out: [SpeechChunk] = []
        for try await chunk in stream { out.append(chunk) }
        return out
    }

    /// The 16-bit samples of a PCM wav (its header checked to be the 44-byte mono one
    /// `WavWriter.pcm16` and libsndfile write) and the header itself.
    static func pcm16(_ wav: Data) throws -> (header: Data, samples: [Int16]) {
        guard wav.count >= 44, wav.subdata(in: 36..<40) == Data("data".utf8) else {
            throw VoxportError(.user, "not a 44-byte-header PCM wav (\(wav.count) bytes)")
        }
        let body = wav.subdata(in: 44..<wav.count)
        let samples = stride(from: 0, to: body.count - 1, by: 2).map {
            Int16(bitPattern: UInt16(body[body.startIndex + $0]) | UInt16(body[body.startIndex + $0 + 1]) << 8)
        }
        return (wav.subdata(in: 0..<44), samples)
    }

    /// The Swift audio quantised as `voxport speak` writes it against the wav it wrote: the
    /// same header (so the same length and rate) and every sample within `lsb`.
    static func assertSameWav(
        _ audio: [Float], sampleRate: Int, _ wav: URL, lsb: Int = 1, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let python = try pcm16(try Data(contentsOf: wav))
        let swift = try pcm16(try WavWriter.pcm16(audio, sampleRate: sampleRate))
        XCTAssertEqual(swift.header, python.header, "wav header (length, rate)", file: file, line: line)
        XCTAssertEqual(swift.samples.count, python.samples.count, file: file, line: line)
        let diffs = zip(swift.samples, python.samples).map { abs(Int($0) - Int($1)) }
        let worst = diffs.max() ?? 0
        print("speaker wav: \(python.samples.count) samples, \(diffs.filter { $0 > 0 }.count) differ, max \(worst) LSB")
        XCTAssertGreaterThan(python.samples.map { abs(Int($0)) }.max() ?? 0, 100, "the CLI's wav is silent", file: file, line: line)
        XCTAssertLessThanOrEqual(worst, lsb, "max |Δ| in LSB against the CLI's wav", file: file, line: line)
    }

    /// max|Δ| / max|ref| over every sample.
    static func relativeError(_ a: [Float], _ reference: [Float]) -> Double {
        let peak = reference.map { abs($0) }.max() ?? 0
        let worst = zip(a, reference).map { abs($0 - $1) }.max() ?? .infinity
        return Double(worst / peak)
    }
}

/// The draws `ChatterboxPipeline.speak` made for each chunk, as chatterbox_case.py saved them
/// (`chunk{i}.npz`: T3's uniform rows, the CFM noise, HiFT's phase and sine noise).
struct RecordedChunkDraws: ChatterboxDraws {
    struct Chunk {
        let rows: [[Float]]
        let noise: [Float]
        let hift: HiftDraws
    }
    let chunks: [Chunk]

    init(_ dir: URL, count: Int) throws {
        chunks = try (0..<count).map { i in
            let z = try NpzArchive.load(dir.appendingPathComponent("chunk\(i).npz"))
            let u = try z.array("uniforms")
            let all = try u.float32(), v = u.shape[1]
            return Chunk(
                rows: (0..<u.shape[0]).map { Array(all[($0 * v)..<(($0 + 1) * v)]) },
                noise: try z.array("noise").float32(),
                hift: HiftDraws(phase: try z.array("phase").float32(), sineNoise: try z.array("sine_noise").float32()))
        }
    }

    /// A chunk index past the recording wraps around (another chunk's draws: the audio then
    /// differs, as it should for a host that asks for the wrong chunk).
    func chunk(_ i: Int) -> Chunk { chunks[((i % chunks.count) + chunks.count) % chunks.count] }
    func uniforms(chunk i: Int) -> T3Uniforms { RecordedUniforms(chunk(i).rows) }
    func noise(chunk i: Int, frames: Int) -> [Float] { chunk(i).noise }
    func hift(chunk i: Int, samples: Int, harmonics: Int) -> HiftDraws { chunk(i).hift }
}
