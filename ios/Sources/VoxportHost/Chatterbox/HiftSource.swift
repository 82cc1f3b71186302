import Foundation
import VoxportDSP

/// Chatterbox's harmonic source (`s3gen/hift/host.py` harmonic_source: `f0_upsamp` + `SineGen` +
/// `SourceModuleHnNSF`), the publisher's float32 ops in its order: f0 repeated 480x, per
/// harmonic `cumsum(f0 (i + 1) / sr) % 1` (the running sum in Double, as torch's kernel),
/// `2 pi` times it plus the drawn phase, `sine_amp sin(.)`, voiced/unvoiced noise, then
/// `tanh(linear over the harmonics)`. Phases are torch's bit for bit; `sin`/`tanh` and the
/// 9-term sum differ by an ulp or so (~1e-7).
public struct HiftSource: Sendable {
    public let tables: HiftTables
    public init(tables: HiftTables) { self.tables = tables }

    /// theta [harmonics, N] (harmonic-major) before the drawn phase: 2 pi (cumsum(f) % 1).
    public func theta(f0: [Float]) -> [Float] {
        let up = tables.upsample, h = tables.harmonics, n = f0.count * up
        let sr = Float(tables.samplingRate), twoPi = Float(2 * Double.pi)
        var out = [Float](repeating: 0, count: h * n)
        for k in 0..<h {
            var acc = 0.0
            let order = Float(k + 1)
            for i in 0..<n {
                acc += Double(f0[i / up] * order / sr)
                // torch's remainder: fmod, moved into [0, 1) when the sign differs.
                var r = Float(acc).truncatingRemainder(dividingBy: 1)
                if r != 0, r < 0 { r += 1 }
                out[k * n + i] = twoPi * r
            }
        }
        return out
    }

    /// The merged source [N] for f0 [frames] (Hz, real frames).
    public func source(f0: [Float], draws: HiftDraws) throws -> [Float] {
        let up = tables.upsample, h = tables.harmonics, n = f0.count * up
        guard draws.phase.count == h, draws.sineNoise.count == h * n else {
            throw DSPError("source draws have \(draws.phase.count) and \(draws.sineNoise.count) values, expected \(h) and \(h * n) for \(f0.count) frames")
        }
        let th = theta(f0: f0)
        let pi32 = Float(Double.pi)
        let low = -pi32, span = pi32 - (-pi32)
        let phase = (0..<h).map { $0 == 0 ? Float(0) : low + draws.phase[$0] * span }
        let sineAmp = Float(tables.sineAmp), noiseStd = Float(tables.noiseStd), threshold = Float(tables.voicedThreshold)
        var out = [Float](repeating: 0, count: n)
        for i in 0..<n {
            let x = f0[i / up]
            let uv: Float = x > threshold ? 1 : 0
            let noiseAmp = uv * noiseStd + ((1 - uv) * sineAmp) / 3
            var acc = Double(tables.linearBias)
            for k in 0..<h {
                let wave = (sineAmp * sin(th[k * n + i] + phase[k])) * uv + noiseAmp * draws.sineNoise[k * n + i]
                acc += Double(wave) * Double(tables.linearWeight[k])
            }
            out[i] = tanh(Float(acc))
        }
        return out
    }
}
