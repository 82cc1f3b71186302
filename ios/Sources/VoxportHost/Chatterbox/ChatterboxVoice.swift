import Foundation
import VoxportCore

/// One voice as the host needs it: the bundle's `voice_default.npz` or a file from
/// `voxport voice chatterbox` (`conversion/chatterbox/voice.py`, format
/// `voxport-chatterbox-voice/1`). T3 sees `condEmb`; S3Gen the prompt tokens, mel and x-vector.
public struct ChatterboxVoice: Sendable {
    public static let format = "voxport-chatterbox-voice/1"
    public static let defaultFileName = "voice_default.npz"
    public static let required = ["cond_emb_base", "emotion_adv_weight", "exaggeration", "prompt_tokens", "prompt_feat", "xvector"]

    /// [1, 34, hidden]: `T3.prepare_conditioning` at `exaggeration`.
    public let condEmbBase: [Float]
    public let emotionAdvWeight: [Float]
    public let exaggeration: Float
    public let promptTokens: [Int32]
    /// [prompt frames, 80], row-major.
    public let promptFeat: [Float]
    public let promptFrames: Int
    public let xvector: [Float]

    public static func load(_ url: URL) throws -> ChatterboxVoice {
        let name = url.lastPathComponent
        let z: NpzArchive
        do { z = try NpzArchive.load(url) } catch {
            throw VoxportError(.user, "voice file \(name) cannot be read (\(error)): re-create it with `voxport voice chatterbox`")
        }
        let format = try? z["format"]?.strings().first
        guard format == Self.format else {
            throw VoxportError(.user, "voice file \(name) is not a \(Self.format) file: re-create it with `voxport voice chatterbox`")
        }
        let missing = required.filter { z[$0] == nil }
        guard missing.isEmpty else {
            throw VoxportError(.user, "voice file \(name) lacks \(missing.joined(separator: ", ")): re-create it with `voxport voice chatterbox`")
        }
        let base = try z.array("cond_emb_base"), w = try z.array("emotion_adv_weight"), feat = try z.array("prompt_feat")
        guard base.shape.count == 3, base.shape[0] == 1, base.shape[2] == w.count,
              feat.shape.count == 3, feat.shape[0] == 1, feat.shape[2] == 80
        else {
            throw VoxportError(.user, "voice file \(name): cond_emb_base \(base.shape), emotion_adv_weight \(w.shape), prompt_feat \(feat.shape) do not fit together")
        }
        return ChatterboxVoice(
            condEmbBase: try base.float32(), emotionAdvWeight: try w.float32(),
            exaggeration: try z.array("exaggeration").float32()[0],
            promptTokens: try ints(z.array("prompt_tokens")), promptFeat: try feat.float32(),
            promptFrames: feat.shape[1], xvector: try z.array("xvector").float32())
    }

    static func ints(_ a: NpyArray) throws -> [Int32] {
        if case .int64(let v) = a.storage { return v.map { Int32($0) } }
        return try a.int32()
    }

    /// T3's conditioning at `exaggeration` (nil: the voice's own): the last row is
    /// `exaggeration * W` (`Voice.cond_emb`), the others do not depend on it.
    public func condEmb(exaggeration e: Float? = nil) throws -> [Float] {
        let e = e ?? exaggeration
        guard e >= 0, e <= 2 else { throw VoxportError(.user, "exaggeration must be in [0.0, 2.0], got \(e)") }
        var out = condEmbBase
        let h = emotionAdvWeight.count, last = out.count - h
        for j in 0..<h { out[last + j] = e * emotionAdvWeight[j] }
        return out
    }
}
