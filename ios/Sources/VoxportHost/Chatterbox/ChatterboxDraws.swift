import Foundation

/// Where a Chatterbox host gets one chunk's randomness (`pipeline.ChunkDraws`): T3's uniforms,
/// the CFM's initial noise [80, frames], the HiFT source's draws for `samples` samples.
public protocol ChatterboxDraws {
    func uniforms(chunk: Int) -> T3Uniforms
    func noise(chunk: Int, frames: Int) -> [Float]
    func hift(chunk: Int, samples: Int, harmonics: Int) -> HiftDraws
}

/// Seeded draws for a device (splitmix64 uniforms, Box-Muller normals): not numpy's or torch's
/// generators, so the audio differs from a Python run's as two seeds would. `vocab` uniforms per
/// T3 draw: Chatterbox's T3 by default, `ChatterboxTurboT3Tables.vocab` for Turbo's.
public struct SplitMixDraws: ChatterboxDraws {
    public let seed: Int
    public let vocab: Int
    public init(seed: Int = 0, vocab: Int = T3Tables.vocab) {
        self.seed = seed
        self.vocab = vocab
    }

    public func uniforms(chunk: Int) -> T3Uniforms { SplitMixUniforms(seed: seed &* 1000 &+ chunk, vocab: vocab) }

    func normals(_ count: Int, stream: Int) -> [Float] {
        let u = SplitMixUniforms(seed: seed &* 1000 &+ stream)
        var out: [Float] = []
        out.reserveCapacity(count)
        while out.count < count {
            let a = (try? u.uniforms(step: 0)) ?? []
            var i = 0
            while i + 1 < a.count, out.count < count {
                let r = (-2 * log(Double(a[i]))).squareRoot(), t = 2 * Double.pi * Double(a[i + 1])
                out.append(Float(r * cos(t)))
                if out.count < count { out.append(Float(r * sin(t))) }
                i += 2
            }
        }
        return out
    }

    public func noise(chunk: Int, frames: Int) -> [Float] { normals(80 * frames, stream: 100 + chunk) }

    public func hift(chunk: Int, samples: Int, harmonics: Int) -> HiftDraws {
        let u = (try? SplitMixUniforms(seed: seed &* 1000 &+ 200 &+ chunk).uniforms(step: 0)) ?? []
        return HiftDraws(phase: Array(u.prefix(harmonics)), sineNoise: normals(harmonics * samples, stream: 300 + chunk))
    }
}
