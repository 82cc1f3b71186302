import Foundation
import VoxportCore

/// T3's conditioning as the publisher's `T3Cond` holds it for Turbo (`t3/host.py` TurboCond): the
/// voice encoder's speaker embedding [256] and the reference clip's speech tokens (may be empty).
public struct TurboCond: Sendable {
    public var speakerEmb: [Float]
    public var promptTokens: [Int]

    public init(speakerEmb: [Float], promptTokens: [Int]) {
        self.speakerEmb = speakerEmb
        self.promptTokens = promptTokens
    }
}

/// Turbo T3's host tables (`t3/host.py` TABLES, `t3_host_arrays`) and the rows the host builds from
/// them, as the publisher's `T3.prepare_input_embeds` does for `inference_turbo` (no positions:
/// the graph adds GPT-2's):
///
///     prefill = spkr_enc(speaker_emb) (1 row) + speech_emb(prompt tokens) + text_emb(text ids)
///               + speech_emb(6561) (the start-of-speech token, once)
///     decode  = speech_emb(token just drawn)
public struct ChatterboxTurboT3Tables: Sendable {
    public static let fileName = "t3_host.npz"
    public static let startSpeech = 6561
    public static let stopSpeech = 6562
    public static let vocab = 6563

    /// Row-major [rows, hidden] tables; the speaker projection [hidden, 256] and its bias [hidden].
    public let textEmb: [Float], speechEmb: [Float], spkrEncWeight: [Float], spkrEncBias: [Float]
    public let hidden: Int
    public let speakerDims: Int

    public init(textEmb: NpyArray, speechEmb: NpyArray, spkrEncWeight: NpyArray, spkrEncBias: NpyArray) throws {
        let hidden = textEmb.shape.last ?? 0
        for (name, t) in [("text_emb", textEmb), ("speech_emb", speechEmb), ("spkr_enc_weight", spkrEncWeight)]
        where t.shape.count != 2 || (name == "spkr_enc_weight" ? t.shape[0] : t.shape[1]) != hidden {
            throw VoxportError(.malformedFile, "\(Self.fileName): \(name) is \(t.shape), expected \(hidden) wide (text_emb's)")
        }
        guard spkrEncBias.shape == [hidden] else {
            throw VoxportError(.malformedFile, "\(Self.fileName): spkr_enc_bias is \(spkrEncBias.shape), expected [\(hidden)]")
        }
        guard speechEmb.shape[0] >= Self.vocab else {
            throw VoxportError(.malformedFile, "\(Self.fileName): speech_emb has \(speechEmb.shape[0]) rows, Turbo's T3 needs \(Self.vocab)")
        }
        self.hidden = hidden
        speakerDims = spkrEncWeight.shape[1]
        self.textEmb = try textEmb.float32()
        self.speechEmb = try speechEmb.float32()
        self.spkrEncWeight = try spkrEncWeight.float32()
        self.spkrEncBias = try spkrEncBias.float32()
    }

    public static func load(_ url: URL) throws -> ChatterboxTurboT3Tables {
        let z = try NpzArchive.load(url)
        return try ChatterboxTurboT3Tables(
            textEmb: z.array("text_emb"), speechEmb: z.array("speech_emb"),
            spkrEncWeight: z.array("spkr_enc_weight"), spkrEncBias: z.array("spkr_enc_bias"))
    }

    var textRows: Int { textEmb.count / hidden }
    var speechRows: Int { speechEmb.count / hidden }

    func row(_ table: [Float], _ i: Int) -> ArraySlice<Float> { table[(i * hidden)..<((i + 1) * hidden)] }

    static func checkIDs(_ ids: [Int], rows: Int, what: String) throws {
        if let lo = ids.min(), let hi = ids.max(), lo < 0 || hi >= rows {
            throw VoxportError(.user, "\(what) ids must be in [0, \(rows)), got \(lo)..\(hi)")
        }
    }

    /// [1 + n, hidden]: T3CondEnc's output, the speaker projection (nn.Linear: W x + b) then the
    /// prompt's speech rows.
    public func condRows(_ cond: TurboCond) throws -> [Float] {
        guard cond.speakerEmb.count == speakerDims else {
            throw VoxportError(
                .user, "speaker_emb must hold \(speakerDims) values (the voice encoder's), got \(cond.speakerEmb.count)")
        }
        try Self.checkIDs(cond.promptTokens, rows: speechRows, what: "prompt speech")
        // A 256-long dot product: accumulated in Double, so within an ulp of any float32 order.
        var out = (0..<hidden).map { i in
            var acc = Double(spkrEncBias[i])
            for j in 0..<speakerDims { acc += Double(spkrEncWeight[i * speakerDims + j]) * Double(cond.speakerEmb[j]) }
            return Float(acc)
        }
        for t in cond.promptTokens { out += row(speechEmb, t) }
        return out
    }

    /// [1, 1 + n + T + 1, hidden] flattened, and its row count: `prefill_embeds`.
    public func prefillEmbeds(cond: TurboCond, textIDs: [Int]) throws -> (values: [Float], rows: Int) {
        guard !textIDs.isEmpty else { throw VoxportError(.user, "text ids must be a non-empty sequence") }
        try Self.checkIDs(textIDs, rows: textRows, what: "text")
        var out = try condRows(cond)
        for id in textIDs { out += row(textEmb, id) }
        out += row(speechEmb, Self.startSpeech)
        return (out, out.count / hidden)
    }

    /// [1, 1, hidden]: the row fed after drawing `token` (`speech_step_embeds`).
    public func stepEmbeds(token: Int) throws -> [Float] {
        guard token >= 0, token < speechRows else {
            throw VoxportError(.user, "speech token \(token) out of range [0, \(speechRows))")
        }
        return Array(row(speechEmb, token))
    }
}
