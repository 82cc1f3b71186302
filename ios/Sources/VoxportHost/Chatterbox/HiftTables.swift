import Foundation
import VoxportCore

/// What the vocoder's host needs (`hift_host.npz`, `s3gen/hift/host.py` hift_host_arrays): the
/// source's 9 -> 1 merge, SineGen's constants, the STFT window and geometry, the output clamp
/// and the pipeline's `trim_fade`.
public struct HiftTables: Sendable {
    public static let fileName = "hift_host.npz"
    public static let magnitudeClip: Float = 100  // HiFTGenerator._istft: clip(magnitude, max=1e2)

    public var linearWeight: [Float]
    public var linearBias: Float
    public var window: [Float]
    public var nFFT: Int, hop: Int, upsample: Int, harmonics: Int, samplingRate: Int
    public var sineAmp: Double, noiseStd: Double, voicedThreshold: Double, audioLimit: Double
    public var trimFade: [Float]?

    public static func load(_ url: URL) throws -> HiftTables {
        let z = try NpzArchive.load(url)
        func int(_ k: String) throws -> Int {
            let a = try z.array(k)
            if case .int64(let v) = a.storage { return Int(v[0]) }
            return Int(try a.int32()[0])
        }
        func dbl(_ k: String) throws -> Double {
            let a = try z.array(k)
            if case .float32(let v) = a.storage { return Double(v[0]) }
            return try a.float64()[0]
        }
        let bias = try z.array("l_linear_bias").float32()
        guard bias.count == 1 else { throw VoxportError(.malformedFile, "\(fileName): l_linear_bias is not [1]") }
        return HiftTables(
            linearWeight: try z.array("l_linear_weight").float32(), linearBias: bias[0],
            window: try z.array("stft_window").float32(), nFFT: try int("n_fft"), hop: try int("hop"),
            upsample: try int("upsample"), harmonics: try int("harmonics"), samplingRate: try int("sampling_rate"),
            sineAmp: try dbl("sine_amp"), noiseStd: try dbl("noise_std"), voicedThreshold: try dbl("voiced_threshold"),
            audioLimit: try dbl("audio_limit"), trimFade: try z["trim_fade"]?.float32())
    }

    public var bins: Int { nFFT / 2 + 1 }
}

/// The source's draws for `samples` audio samples, in the publisher's shapes:
/// `phase` [harmonics] (torch.rand), `sineNoise` [harmonics, samples] (harmonic-major, as
/// [1, 9, N]). The noise branch's draw (`source_noise`) is dropped by the generator.
public struct HiftDraws: Sendable {
    public let phase: [Float]
    public let sineNoise: [Float]
    public init(phase: [Float], sineNoise: [Float]) {
        self.phase = phase
        self.sineNoise = sineNoise
    }
}
