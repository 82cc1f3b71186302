import Foundation
import VoxportCore

/// One Chatterbox Turbo voice as the host needs it: the bundle's `voice_default.npz` or a file
/// from `voxport voice chatterbox_turbo` (`conversion/chatterbox_turbo/voice.py` TurboVoice,
/// format `voxport-chatterbox_turbo-voice/1`). T3 sees the speaker embedding and its prompt
/// tokens (`t3Cond`); S3Gen the prompt tokens, mel and x-vector (`S3GenPrompt`).
public struct ChatterboxTurboVoice: S3GenPrompt {
    public static let format = "voxport-chatterbox_turbo-voice/1"
    public static let defaultFileName = "voice_default.npz"
    public static let required = ["t3_speaker_emb", "t3_prompt_tokens", "prompt_tokens", "prompt_feat", "xvector"]
    static let fix = "make one with `voxport voice chatterbox_turbo --ref WAV`"

    /// [256]: the voice encoder's speaker embedding.
    public let t3SpeakerEmb: [Float]
    /// T3's speech prompt (may be empty).
    public let t3PromptTokens: [Int]
    public let promptTokens: [Int32]
    /// [prompt frames, 80], row-major: two mel frames per prompt token.
    public let promptFeat: [Float]
    public let promptFrames: Int
    /// [192]: CAMPPlus's x-vector.
    public let xvector: [Float]

    public init(t3SpeakerEmb: [Float], t3PromptTokens: [Int], promptTokens: [Int32], promptFeat: [Float], promptFrames: Int, xvector: [Float]) {
        self.t3SpeakerEmb = t3SpeakerEmb
        self.t3PromptTokens = t3PromptTokens
        self.promptTokens = promptTokens
        self.promptFeat = promptFeat
        self.promptFrames = promptFrames
        self.xvector = xvector
    }

    public var t3Cond: TurboCond { TurboCond(speakerEmb: t3SpeakerEmb, promptTokens: t3PromptTokens) }

    public static func load(_ url: URL) throws -> ChatterboxTurboVoice {
        let name = url.lastPathComponent
        let z: NpzArchive
        do { z = try NpzArchive.load(url) } catch {
            throw VoxportError(.user, "voice file \(name) cannot be read (\(error)): \(fix)")
        }
        let format = try? z["format"]?.strings().first
        guard format == Self.format else {
            throw VoxportError(.user, "voice file \(name) is not a \(Self.format) file (format \(format ?? "none")): \(fix)")
        }
        let missing = required.filter { z[$0] == nil }
        guard missing.isEmpty else {
            throw VoxportError(.user, "voice file \(name) lacks \(missing.joined(separator: ", ")): \(fix)")
        }
        let speaker = try z.array("t3_speaker_emb"), xvector = try z.array("xvector"), feat = try z.array("prompt_feat")
        let prompt = try ChatterboxVoice.ints(z.array("prompt_tokens"))
        guard speaker.count == 256, xvector.count == 192 else {
            throw VoxportError(.user, "voice file \(name): t3_speaker_emb \(speaker.shape) and xvector \(xvector.shape) must hold 256 and 192 values: \(fix)")
        }
        guard feat.shape.count == 3, feat.shape[0] == 1, feat.shape[1] == 2 * prompt.count, feat.shape[2] == 80 else {
            throw VoxportError(.user, "voice file \(name): prompt_feat \(feat.shape) does not hold 2 mel frames for each of the \(prompt.count) prompt tokens: \(fix)")
        }
        return ChatterboxTurboVoice(
            t3SpeakerEmb: try speaker.float32(), t3PromptTokens: try ChatterboxVoice.ints(z.array("t3_prompt_tokens")).map { Int($0) },
            promptTokens: prompt, promptFeat: try feat.float32(), promptFrames: feat.shape[1], xvector: try xvector.float32())
    }
}
