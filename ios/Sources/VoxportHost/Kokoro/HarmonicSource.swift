import Foundation
import VoxportCore
import VoxportDSP

/// Constants of the publisher's `Generator.m_source` and `Generator.stft` (`source.py`).
public struct SourceConfig: Sendable {
    public var samplingRate = 24000
    public var upsampleScale = 300
    public var harmonics = 9
    public var sineAmp: Float = 0.1
    public var noiseStd: Float = 0.003
    public var voicedThreshold: Float = 10
    public var nFFT = 20
    public var hop = 5

    public init() {}
    public static let published = SourceConfig()
    public var bins: Int { nFFT / 2 + 1 }
}

/// The source's random draws for one chunk, in the publisher's order and shapes:
/// `randIni` [harmonics], `sineNoise` [samples * harmonics] (sample-major, [1, S, 9]).
public struct SourceDraws: Sendable {
    public let randIni: [Float]
    public let sineNoise: [Float]

    public init(randIni: [Float], sineNoise: [Float]) {
        self.randIni = randIni
        self.sineNoise = sineNoise
    }
}

/// Where a host gets its draws: `frames` F0 values (2L), `seed` per chunk.
public protocol SourceNoise {
    func draws(frames: Int, seed: Int) -> SourceDraws
}

/// Seeded draws for a device (splitmix64 uniforms, Box-Muller normals). Not torch's
/// generator: the audio differs from a Python run's in its noise, as two seeds would.
public struct SplitMixNoise: SourceNoise {
    public let config: SourceConfig
    public init(config: SourceConfig = .published) { self.config = config }

    public func draws(frames: Int, seed: Int) -> SourceDraws {
        var state = UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15 &+ 0x2545_F491_4F6C_DD1D
        func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return (Double(z >> 11) + 0.5) / 9_007_199_254_740_992.0  // (0, 1)
        }
        let h = config.harmonics
        let randIni = (0..<h).map { _ in Float(next()) }
        let count = frames * config.upsampleScale * h
        var noise = [Float](repeating: 0, count: count)
        var i = 0
        while i < count {
            let r = (-2 * log(next())).squareRoot(), a = 2 * Double.pi * next()
            noise[i] = Float(r * cos(a))
            if i + 1 < count { noise[i + 1] = Float(r * sin(a)) }
            i += 2
        }
        return SourceDraws(randIni: randIni, sineNoise: noise)
    }
}

/// The vocoder's harmonic source on the host (`source.py`): F0 -> 9 sines (phase integrated
/// at frame rate, SineGen's way) -> noise and voicing -> learned 9 -> 1 mix (`l_linear`, from
/// the bundle's `host_source.npz`) -> its STFT as `har` [2 * bins, S / hop + 1].
///
/// Phases are bit-identical to torch's (the same float32 ops, the cumsum in Double, the
/// interpolations fused as torch's kernel); sines differ by torch's 1-ulp `sin`, the mix by
/// summation order, the STFT by float64 rounding: ~1e-6.
public struct HarmonicSource: Sendable {
    public static let fileName = "host_source.npz"
    public let weight: [Float]
    public let bias: Float
    public let config: SourceConfig

    public init(weight: [Float], bias: Float, config: SourceConfig = .published) throws {
        guard weight.count == config.harmonics else {
            throw VoxportError(.user, "l_linear weight has \(weight.count) values, expected \(config.harmonics)")
        }
        self.weight = weight
        self.bias = bias
        self.config = config
    }

    /// From the bundle's `host_source.npz` (`l_linear_weight` [1, 9], `l_linear_bias` [1]).
    public static func load(_ url: URL, config: SourceConfig = .published) throws -> HarmonicSource {
        let npz = try NpzArchive.load(url)
        let b = try npz.array("l_linear_bias").float32()
        guard b.count == 1 else { throw VoxportError(.malformedFile, "\(url.lastPathComponent): l_linear_bias is not [1]") }
        return try HarmonicSource(weight: try npz.array("l_linear_weight").float32(), bias: b[0], config: config)
    }

    /// F0 [N] at frame rate -> [N * scale] at audio rate (nearest, as nn.Upsample).
    func samples(_ f0: [Float]) -> [Float] {
        var out = [Float](repeating: 0, count: f0.count * config.upsampleScale)
        for (i, v) in f0.enumerated() {
            for k in 0..<config.upsampleScale { out[i * config.upsampleScale + k] = v }
        }
        return out
    }

    /// The sines' phases [S * H] (sample-major), before `sin`: `_sines` up to its last op.
    public func phases(f0: [Float], randIni: [Float]) -> [Float] {
        let h = config.harmonics, scale = config.upsampleScale
        let fs = samples(f0)
        let s = fs.count
        let sr = Float(config.samplingRate)
        let pi32 = Float(Double.pi)  // torch.pi as float32 (Float.pi is rounded toward zero)
        var out = [Float](repeating: 0, count: s * h)
        var rad = [Float](repeating: 0, count: s)
        for k in 0..<h {
            let order = Float(k + 1)
            for i in 0..<s {
                // torch's remainder: fmod, moved into [0, 1) when the sign differs.
                var r = ((fs[i] * order) / sr).truncatingRemainder(dividingBy: 1)
                if r != 0, r < 0 { r += 1 }
                rad[i] = r
            }
            if k > 0, s > 0 { rad[0] = rad[0] + randIni[k] }  // the fundamental starts at phase 0
            let down = Resample.linear(rad, scaleFactor: 1.0 / Double(scale))
            let phase = Accumulate.cumsum(down).map { $0 * 2 * pi32 * Float(scale) }
            let up = Resample.linear(phase, scaleFactor: Double(scale))
            for i in 0..<min(up.count, s) { out[i * h + k] = up[i] }
        }
        return out
    }

    /// The merged sine source [S] (`source.excitation`).
    public func excitation(f0: [Float], draws: SourceDraws) throws -> [Float] {
        let h = config.harmonics
        let fs = samples(f0)
        guard draws.randIni.count == h, draws.sineNoise.count == fs.count * h else {
            throw VoxportError(
                .user,
                "draws have \(draws.randIni.count) and \(draws.sineNoise.count) values, expected \(h) and \(fs.count * h)")
        }
        let up = phases(f0: f0, randIni: draws.randIni)
        let unvoicedAmp = (1 * config.sineAmp) / 3
        var out = [Float](repeating: 0, count: fs.count)
        for i in 0..<fs.count {
            let voiced = fs[i] > config.voicedThreshold
            let uv: Float = voiced ? 1 : 0
            let amp = uv * config.noiseStd + (voiced ? 0 : unvoicedAmp)
            var acc = Double(bias)
            for k in 0..<h {
                let sine = sin(up[i * h + k]) * config.sineAmp
                let wave = sine * uv + amp * draws.sineNoise[i * h + k]
                acc += Double(wave) * Double(weight[k])
            }
            out[i] = tanh(Float(acc))
        }
        return out
    }

    /// `cat([|STFT|, angle(STFT)])` [2 * bins * frames] (bins-major) of `source`: periodic
    /// Hann (float64 rounded to float32), centred, reflect-padded, as `source_spectrum`.
    public func spectrum(_ source: [Float]) throws -> (values: [Float], frames: Int) {
        let window = Windows.hann(config.nFFT)
        let spec = try Spectral.stft(source, nFFT: config.nFFT, hop: config.hop, winLength: config.nFFT, window: window)
        let (mag, phase) = Spectral.magnitudePhase(spec)
        return (mag + phase, spec.frames)
    }

    /// `har` with every phase of exactly -π (as float32) set to +π: the same angle, one sign.
    ///
    /// Why: with a centred, reflect-padded STFT the first frame is symmetric, so its DFT is real
    /// and each bin's phase is 0 or ±π — the sign of π is the sign of a rounding error in the
    /// imaginary part (torch's MKL FFT on one machine, our float64 DFT here), which no other FFT
    /// reproduces. The vocoder reads the raw angle, so a ±π disagreement moves the waveform
    /// (3.2e-4 of its peak on "Hello there."). Folding both hosts' phases this way compares them
    /// without that coin flip; the host does not fold unless asked (`KokoroPipeline.foldNegativePi`).
    public func foldingNegativePi(_ har: (values: [Float], frames: Int)) -> (values: [Float], frames: Int) {
        let minusPi = Float(-Double.pi)  // 0xC0490FDB, what atan2f returns; -Float.pi is 1 ulp smaller in magnitude
        var values = har.values
        let phaseStart = config.bins * har.frames
        for i in phaseStart..<values.count where values[i] == minusPi { values[i] = -minusPi }
        return (values, har.frames)
    }

    /// `har` for F0's real values [2L]: [2 * bins * (120 L + 1)].
    public func har(f0: [Float], draws: SourceDraws) throws -> (values: [Float], frames: Int) {
        try spectrum(try excitation(f0: f0, draws: draws))
    }
}
