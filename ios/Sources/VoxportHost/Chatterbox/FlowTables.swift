import Foundation
import VoxportCore

/// What the flow's host needs besides the graphs (`flow_host.npz`, `s3gen/flow/host.py`
/// flow_host_arrays): the x-vector affine layer and the CFM settings (`meanflow` = 1: Chatterbox
/// Turbo's mean-flow decoder; absent, as in Chatterbox's bundles: the CFG Euler loop).
public struct FlowTables: Sendable {
    public static let fileName = "flow_host.npz"
    public static let melChannels = 80
    /// [80, 192] row-major, and [80].
    public let affineWeight: [Float], affineBias: [Float]
    public let cfgRate: Float
    public let cosineSchedule: Bool
    public let vocabSize: Int
    public let tokenMelRatio: Int
    public let meanFlow: Bool

    public init(affineWeight: [Float], affineBias: [Float], cfgRate: Float, cosineSchedule: Bool, vocabSize: Int, tokenMelRatio: Int,
                meanFlow: Bool = false) {
        self.affineWeight = affineWeight
        self.affineBias = affineBias
        self.cfgRate = cfgRate
        self.cosineSchedule = cosineSchedule
        self.vocabSize = vocabSize
        self.tokenMelRatio = tokenMelRatio
        self.meanFlow = meanFlow
    }

    public static func load(_ url: URL) throws -> FlowTables {
        let z = try NpzArchive.load(url)
        return FlowTables(
            affineWeight: try z.array("spk_embed_affine_weight").float32(),
            affineBias: try z.array("spk_embed_affine_bias").float32(),
            cfgRate: try z.array("inference_cfg_rate").float32()[0],
            cosineSchedule: try scalar(z.array("t_scheduler_cosine")) != 0,
            vocabSize: try scalar(z.array("vocab_size")),
            tokenMelRatio: try scalar(z.array("token_mel_ratio")),
            meanFlow: (try z["meanflow"].map(scalar) ?? 0) != 0)
    }

    static func scalar(_ a: NpyArray) throws -> Int {
        switch a.storage {
        case .int32(let v): return Int(v[0])
        case .int64(let v): return Int(v[0])
        default: throw VoxportError(.malformedFile, "\(fileName): expected an integer, got \(a.dtype)")
        }
    }

    /// `spk_embed_affine_layer(F.normalize(xvector))` in float64, rounded: [192] -> [80].
    public func speakerProjection(_ xvector: [Float]) -> [Float] {
        let x = xvector.map(Double.init)
        let norm = max(x.reduce(0) { $0 + $1 * $1 }.squareRoot(), 1e-12)
        let n = x.count
        return (0..<affineBias.count).map { o in
            var acc = 0.0
            for i in 0..<n { acc += (x[i] / norm) * Double(affineWeight[o * n + i]) }
            return Float(acc + Double(affineBias[o]))
        }
    }

    /// The n + 1 times: numpy's linspace(0, 1) (start + i * step, the last set to 1), through
    /// 1 - cos(t pi / 2) for the cosine schedule, in float64 rounded to float32 (`t_schedule`).
    public static func schedule(steps: Int, cosine: Bool) throws -> [Float] {
        guard steps >= 1 else { throw VoxportError(.user, "n_steps = \(steps): the Euler loop needs at least one step") }
        let step = 1.0 / Double(steps)
        return (0...steps).map { i in
            let t = i == steps ? 1.0 : Double(i) * step
            return Float(cosine ? 1 - cos(t * 0.5 * Double.pi) : t)
        }
    }
}
