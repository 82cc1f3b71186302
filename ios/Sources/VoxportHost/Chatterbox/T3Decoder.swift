import Foundation
import VoxportCore
import VoxportRunner

/// T3's draws so far: tokens (the stop token excluded), each draw's CFG logits pair, and
/// whether the stop token ended it (`t3/host.py` T3Result).
public struct T3Result: Sendable {
    public var tokens: [Int] = []
    public var condLogits: [[Float]] = []
    public var uncondLogits: [[Float]] = []
    public var stopped = false
}

/// The uniforms of draw `step` (one per vocabulary row: 8194 for Chatterbox's T3, 6563 for
/// Turbo's): recorded ones replay a Python run exactly.
public protocol T3Uniforms {
    func uniforms(step: Int) throws -> [Float]
}

/// Uniforms given up front, one row per step.
public struct RecordedUniforms: T3Uniforms {
    public let rows: [[Float]]
    public init(_ rows: [[Float]]) { self.rows = rows }
    public func uniforms(step: Int) throws -> [Float] {
        guard step < rows.count else { throw VoxportError(.user, "uniforms: no row for step \(step) (have \(rows.count))") }
        return rows[step]
    }
}

/// Seeded uniforms in (0, 1) for a device run (splitmix64): not numpy's generator, so the
/// tokens differ from a Python run's as two seeds would. `vocab` values per step (Chatterbox's
/// T3 by default).
public final class SplitMixUniforms: T3Uniforms {
    var state: UInt64
    let vocab: Int
    public init(seed: Int, vocab: Int = T3Tables.vocab) {
        state = UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15
        self.vocab = vocab
    }
    public func uniforms(step: Int) throws -> [Float] {
        (0..<vocab).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return Float((Double(z >> 40) + 0.5) / 16_777_216.0)
        }
    }
}

/// T3's AR loop over the "t3" graph (`t3/host.py` generate): prefill at the smallest bucket
/// that holds the prompt rows (KV state zeroed first, in the runner), then one decode call per
/// drawn token; each draw is CFG + repetition penalty over the history (which starts with the
/// start token, the publisher's `generated_ids`) + temperature + min-p + top-p + the race.
public struct T3Decoder {
    public static let graph = "t3"
    public let tables: T3Tables
    public let prefillBuckets: BucketTable
    public let kvLength: Int

    public init(tables: T3Tables, prefillBuckets: BucketTable, kvLength: Int) {
        self.tables = tables
        self.prefillBuckets = prefillBuckets
        self.kvLength = kvLength
    }

    /// The prefill bucket for `rows`, or a bucket-overflow error (bucket or KV length).
    public func checkFits(rows: Int, maxNewTokens: Int) throws -> Int {
        try T3Prefill.bucket(rows: rows, maxNewTokens: maxNewTokens, buckets: prefillBuckets, kvLength: kvLength)
    }

    public func generate(
        runner: GraphRunner, condEmb: [Float], textIDs: [Int32], sampling: SamplingConfig,
        uniforms: T3Uniforms, maxNewTokens: Int, state: String = "default"
    ) async throws -> T3Result {
        guard maxNewTokens >= 1 else { throw VoxportError(.user, "max_new_tokens must be >= 1, got \(maxNewTokens)") }
        let (embeds, rows) = try tables.prefillEmbeds(condEmb: condEmb, textIDs: textIDs)
        let bucket = try checkFits(rows: rows, maxNewTokens: maxNewTokens)
        let h = tables.hidden
        let padded = T3Prefill.padded(embeds, batch: 2, rows: rows, bucket: bucket, hidden: h)
        try await runner.resetState(graph: Self.graph, state: state)
        var logits = try await runner.run(
            graph: Self.graph, function: "prefill_P\(bucket)",
            inputs: ["embeds": TensorSlices.floats(padded, [2, bucket, h]), "length": TensorSlices.ints([Int32(rows)], [1])],
            state: state)
        var result = T3Result()
        var history = [T3Tables.startSpeech]
        for step in 0..<maxNewTokens {
            let (cond, uncond) = try Self.pair(logits)
            result.condLogits.append(cond)
            result.uncondLogits.append(uncond)
            let token = try Sampling.sample(
                cond, uniforms: try uniforms.uniforms(step: step), config: sampling, previous: history, uncond: uncond)
            if token == T3Tables.stopSpeech {
                result.stopped = true
                break
            }
            result.tokens.append(token)
            history.append(token)
            if step == maxNewTokens - 1 { break }
            logits = try await runner.run(
                graph: Self.graph, function: "decode",
                inputs: [
                    "embeds": TensorSlices.floats(try tables.stepEmbeds(token: token, step: step), [2, 1, h]),
                    "position": TensorSlices.ints([Int32(rows + step)], [1]),
                ],
                state: state)
        }
        return result
    }

    /// The graph's `logits` [2, V]: the cond and uncond rows.
    static func pair(_ out: [String: Tensor]) throws -> ([Float], [Float]) {
        guard let t = out["logits"] else {
            throw VoxportError(.bundleIntegrity, "t3 returned no 'logits' (has: \(out.keys.sorted()))")
        }
        let v = try t.float32()
        let n = v.count / 2
        return (Array(v[..<n]), Array(v[n...]))
    }
}
