import Foundation
import VoxportCore
import VoxportRunner

/// The vocoder's result: the clamped wav [480 n] before trim_fade, f0 [n] and the source.
public struct HiftResult: Sendable {
    public var wav: [Float]
    public var f0: [Float]
    public var source: [Float]
}

/// mel -> wav through `hift_f0` and `hift_trunk` at the smallest frame bucket that fits
/// (`s3gen/hift/host.py` vocode): f0 on the padded mel, the harmonic source and its STFT on the real
/// frames (zero-padded to the bucket's 120 F + 1 frames), the trunk's magnitude and phase cut to
/// the real frames, iSTFT, clamp, the first 480 n samples.
public struct HiftVocoder {
    public static let f0Graph = "hift_f0", trunkGraph = "hift_trunk"
    public let tables: HiftTables
    public let buckets: BucketTable
    public init(tables: HiftTables, buckets: BucketTable) {
        self.tables = tables
        self.buckets = buckets
    }

    public func vocode(runner: GraphRunner, mel: [Float], frames: Int, draws: HiftDraws) async throws -> HiftResult {
        let c = FlowTables.melChannels
        guard mel.count == c * frames else { throw VoxportError(.user, "mel must be [1, 80, \(frames)], got \(mel.count) values") }
        let bucket = try buckets.select([("F", frames)])
        let size = bucket["F"]!
        let melP = try TensorSlices.resize(TensorSlices.floats(mel, [1, c, frames]), axis: 2, to: size)
        let n = TensorSlices.ints([Int32(frames)], [1])
        let f0Out = try await runner.run(graph: Self.f0Graph, function: "f0_\(bucket.label)", inputs: ["mel": melP, "n_frames": n])
        guard let f0t = f0Out["f0"] else { throw VoxportError(.bundleIntegrity, "hift_f0 returned no 'f0'") }
        let f0 = Array(try f0t.float32().prefix(frames))
        let source = try HiftSource(tables: tables).source(f0: f0, draws: draws)
        let stft = try HiftSpectra.sourceSTFT(source, tables: tables)
        let rows = 2 * tables.bins
        let padded = try TensorSlices.resize(
            TensorSlices.floats(stft.values, [1, rows, stft.frames]), axis: 2, to: size * (tables.upsample / tables.hop) + 1)
        let out = try await runner.run(graph: Self.trunkGraph, function: "trunk_\(bucket.label)",
                                 inputs: ["mel": melP, "source_stft": padded, "n_frames": n])
        guard let mag = out["magnitude"], let phase = out["phase"] else {
            throw VoxportError(.bundleIntegrity, "hift_trunk returned \(out.keys.sorted()), expected magnitude and phase")
        }
        let m = try TensorSlices.resize(mag, axis: 2, to: stft.frames).float32()
        let p = try TensorSlices.resize(phase, axis: 2, to: stft.frames).float32()
        let wav = try HiftSpectra.inverse(magnitude: m, phase: p, frames: stft.frames, tables: tables)
        return HiftResult(wav: Array(wav.prefix(frames * tables.upsample)), f0: f0, source: source)
    }
}
