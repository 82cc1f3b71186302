import Foundation
import VoxportCore
import VoxportRunner

extension SamplingOrder {
    /// `conversion/chatterbox_turbo/sampling.py` TURBO_ORDER: `inference_turbo`'s processors,
    /// the repetition penalty last.
    public static let chatterboxTurbo = SamplingOrder(penaltyAfterFilters: true)
}

extension SamplingConfig {
    /// `inference_turbo`'s processors (`turbo_sampling`; its defaults are these defaults).
    public static func chatterboxTurbo(
        temperature: Float = 0.8, topK: Int = 1000, topP: Float = 0.95, repetitionPenalty: Float = 1.2
    ) -> SamplingConfig {
        SamplingConfig(
            temperature: temperature, topK: topK, topP: topP, repetitionPenalty: repetitionPenalty, order: .chatterboxTurbo)
    }
}

/// Turbo T3's draws (`t3/host.py` T3TurboResult): the tokens (one trailing stop token dropped),
/// the graph's logits before each draw, whether a stop token ended the loop.
public struct ChatterboxTurboT3Result: Sendable {
    public var tokens: [Int] = []
    public var logits: [[Float]] = []
    public var stopped = false
    public var steps: Int { logits.count }
}

/// Turbo T3's AR loop over the "t3" graph (`t3/host.py` generate), the publisher's
/// `inference_turbo` as it is: prefill at the smallest bucket holding the prompt rows (KV state
/// zeroed first), then one decode call per draw fed back. No CFG: one sequence. Each draw is
/// temperature, top-k, top-p, then the repetition penalty (`SamplingOrder.chatterboxTurbo`) over
/// `penaltyHistory`, then the race on the step's uniforms. Draw 0 (from the prefill) is never
/// checked for the stop token (a stop drawn there is fed back); from draw 1 on the loop ends on
/// the stop token, or before drawing when every processed score is -inf.
public struct ChatterboxTurboT3 {
    public static let graph = "t3"
    public let tables: ChatterboxTurboT3Tables
    public let prefillBuckets: BucketTable
    public let kvLength: Int

    public init(tables: ChatterboxTurboT3Tables, prefillBuckets: BucketTable, kvLength: Int) {
        self.tables = tables
        self.prefillBuckets = prefillBuckets
        self.kvLength = kvLength
    }

    /// The ids the repetition penalty sees at draw `step`: inference_turbo's input_ids, the start
    /// token at draw 0, then the drawn tokens alone.
    public static func penaltyHistory(step: Int, drawn: [Int]) -> [Int] {
        step == 0 ? [ChatterboxTurboT3Tables.startSpeech] : drawn
    }

    /// Draw `step` from the graph's logits; nil when every processed score is -inf (from draw 1
    /// on: the publisher checks only inside its loop).
    public static func draw(
        _ logits: [Float], step: Int, drawn: [Int], sampling: SamplingConfig, uniforms: T3Uniforms
    ) throws -> Int? {
        let scores = try Sampling.processLogits(
            logits, config: sampling, previous: penaltyHistory(step: step, drawn: drawn))
        if step > 0, !scores.contains(where: \.isFinite) { return nil }
        let u = try uniforms.uniforms(step: step)
        guard u.count == ChatterboxTurboT3Tables.vocab else {
            throw VoxportError(.user, "uniforms for draw \(step): \(u.count) values, want \(ChatterboxTurboT3Tables.vocab)")
        }
        return try Sampling.gumbelArgmax(scores, uniforms: u)
    }

    public func generate(
        runner: GraphRunner, cond: TurboCond, textIDs: [Int], sampling: SamplingConfig,
        uniforms: T3Uniforms, maxNewTokens: Int, state: String = "default"
    ) async throws -> ChatterboxTurboT3Result {
        guard maxNewTokens >= 1 else { throw VoxportError(.user, "max_new_tokens must be >= 1, got \(maxNewTokens)") }
        if sampling.cfgWeight != nil || sampling.usesMinP {
            // ChatterboxTurboTTS.generate ignores both (with a warning); inference_turbo has neither
            throw VoxportError(.user, "Turbo's T3 samples without CFG or min-p: leave cfg_weight and min_p unset")
        }
        let (embeds, rows) = try tables.prefillEmbeds(cond: cond, textIDs: textIDs)
        let bucket = try T3Prefill.bucket(rows: rows, maxNewTokens: maxNewTokens, buckets: prefillBuckets, kvLength: kvLength)
        let h = tables.hidden
        let padded = T3Prefill.padded(embeds, batch: 1, rows: rows, bucket: bucket, hidden: h)
        try await runner.resetState(graph: Self.graph, state: state)
        var out = try await runner.run(
            graph: Self.graph, function: "prefill_P\(bucket)",
            inputs: ["embeds": TensorSlices.floats(padded, [1, bucket, h]), "length": TensorSlices.ints([Int32(rows)], [1])],
            state: state)
        var result = ChatterboxTurboT3Result()
        var drawn: [Int] = []
        for step in 0..<maxNewTokens {
            let logits = try Self.logits(out)
            guard let token = try Self.draw(logits, step: step, drawn: drawn, sampling: sampling, uniforms: uniforms)
            else { break }
            result.logits.append(logits)
            drawn.append(token)
            if step > 0, token == ChatterboxTurboT3Tables.stopSpeech { break }
            if step == maxNewTokens - 1 { break }
            out = try await runner.run(
                graph: Self.graph, function: "decode",
                inputs: [
                    "embeds": TensorSlices.floats(try tables.stepEmbeds(token: token), [1, 1, h]),
                    "position": TensorSlices.ints([Int32(rows + step)], [1]),
                ],
                state: state)
        }
        if drawn.last == ChatterboxTurboT3Tables.stopSpeech {
            result.stopped = true
            drawn.removeLast()
        }
        result.tokens = drawn
        return result
    }

    /// The graph's `logits` [1, 6563].
    static func logits(_ out: [String: Tensor]) throws -> [Float] {
        guard let t = out["logits"] else {
            throw VoxportError(.bundleIntegrity, "t3 returned no 'logits' (has: \(out.keys.sorted()))")
        }
        let v = try t.float32()
        guard v.count == ChatterboxTurboT3Tables.vocab else {
            throw VoxportError(.bundleIntegrity, "t3 returned \(v.count) logits, Turbo's T3 has \(ChatterboxTurboT3Tables.vocab)")
        }
        return v
    }
}
