import Foundation
import VoxportCore

/// T3's four embedding tables (`t3_host.npz`, `t3/host.py` TABLES) and the rows the host builds
/// from them, as the publisher's `T3.inference` does:
///
///     prefill = cond_emb (34 rows) + text (text_emb(id) + text_pos_emb(i); the uncond batch
///               row keeps only the positions) + 2 x (speech_emb(6561) + speech_pos_emb(0))
///     decode step i = speech_emb(token_i) + speech_pos_emb(i + 1), the same in both rows
public struct T3Tables: Sendable {
    public static let fileName = "t3_host.npz"
    public static let startSpeech = 6561
    public static let stopSpeech = 6562
    public static let vocab = 8194

    /// Row-major [rows, hidden] tables.
    public let textEmb: [Float], textPosEmb: [Float], speechEmb: [Float], speechPosEmb: [Float]
    public let hidden: Int

    public init(textEmb: NpyArray, textPosEmb: NpyArray, speechEmb: NpyArray, speechPosEmb: NpyArray) throws {
        let all = [("text_emb", textEmb), ("text_pos_emb", textPosEmb), ("speech_emb", speechEmb), ("speech_pos_emb", speechPosEmb)]
        let hidden = textEmb.shape.last ?? 0
        for (name, t) in all where t.shape.count != 2 || t.shape[1] != hidden {
            throw VoxportError(.malformedFile, "\(Self.fileName): \(name) is \(t.shape), expected [rows, \(hidden)]")
        }
        guard speechEmb.shape[0] > Self.stopSpeech else {
            throw VoxportError(.malformedFile, "\(Self.fileName): speech_emb has \(speechEmb.shape[0]) rows, T3 needs \(Self.vocab)")
        }
        self.hidden = hidden
        self.textEmb = try textEmb.float32()
        self.textPosEmb = try textPosEmb.float32()
        self.speechEmb = try speechEmb.float32()
        self.speechPosEmb = try speechPosEmb.float32()
    }

    public static func load(_ url: URL) throws -> T3Tables {
        let z = try NpzArchive.load(url)
        return try T3Tables(textEmb: z.array("text_emb"), textPosEmb: z.array("text_pos_emb"),
                            speechEmb: z.array("speech_emb"), speechPosEmb: z.array("speech_pos_emb"))
    }

    var textRows: Int { textEmb.count / hidden }
    var textPositions: Int { textPosEmb.count / hidden }
    var speechRows: Int { speechEmb.count / hidden }
    var speechPositions: Int { speechPosEmb.count / hidden }

    func row(_ table: [Float], _ i: Int) -> ArraySlice<Float> { table[(i * hidden)..<((i + 1) * hidden)] }

    /// [2, 34 + T + 2, hidden] (row 0 cond, row 1 uncond), flattened: `prefill_embeds`.
    public func prefillEmbeds(condEmb: [Float], textIDs: [Int32]) throws -> (values: [Float], rows: Int) {
        guard !textIDs.isEmpty else { throw VoxportError(.user, "text_ids must be a non-empty sequence") }
        if let bad = textIDs.first(where: { $0 < 0 || Int($0) >= textRows }) {
            throw VoxportError(.user, "text ids must be in [0, \(textRows)), got \(bad)")
        }
        guard textIDs.count <= textPositions else {
            throw VoxportError(.bucketOverflow, "\(textIDs.count) text tokens exceed T3's \(textPositions) text positions")
        }
        guard condEmb.count % hidden == 0 else {
            throw VoxportError(.user, "cond_emb has \(condEmb.count) values, not rows of \(hidden)")
        }
        var start = [Float](repeating: 0, count: hidden)
        for j in 0..<hidden { start[j] = speechEmb[Self.startSpeech * hidden + j] + speechPosEmb[j] }
        var out: [Float] = []
        let rows = condEmb.count / hidden + textIDs.count + 2
        out.reserveCapacity(2 * rows * hidden)
        for uncond in [false, true] {
            out += condEmb
            for (i, id) in textIDs.enumerated() {
                let pos = row(textPosEmb, i), emb = row(textEmb, Int(id))
                // text_emb[1].zero_(): the uncond row keeps the positions (0 + p).
                for j in 0..<hidden { out.append((uncond ? 0 : emb[emb.startIndex + j]) + pos[pos.startIndex + j]) }
            }
            out += start
            out += start
        }
        return (out, rows)
    }

    /// [2, 1, hidden]: the row fed after drawing token number `step` (0-based).
    public func stepEmbeds(token: Int, step: Int) throws -> [Float] {
        guard token >= 0, token < speechRows else { throw VoxportError(.user, "speech token \(token) out of range") }
        guard step + 1 < speechPositions else {
            throw VoxportError(.bucketOverflow, "speech step \(step) exceeds T3's speech positions")
        }
        let e = row(speechEmb, token), p = row(speechPosEmb, step + 1)
        let r = (0..<hidden).map { e[e.startIndex + $0] + p[p.startIndex + $0] }
        return r + r
    }
}
