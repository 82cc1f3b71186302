import Foundation
import VoxportCore

/// What Chatterbox's and Chatterbox Turbo's T3 loops share (`t3/host.py` check_fits, pad_to):
/// the prefill bucket and the KV budget, and the prompt rows padded to the bucket.
public enum T3Prefill {
    /// The prefill bucket for `rows`, or a bucket-overflow error (bucket or KV length).
    public static func bucket(rows: Int, maxNewTokens: Int, buckets: BucketTable, kvLength: Int) throws -> Int {
        let bucket = try buckets.select([("P", rows)])["P"]!
        let lastRow = rows + maxNewTokens - 2  // draw k is fed back at row rows + k, but the last
        guard lastRow < kvLength else {
            throw VoxportError(
                .bucketOverflow,
                "T3 KV cache too short: \(rows) prompt rows + \(maxNewTokens) new tokens need \(lastRow + 1) rows, "
                    + "the graph holds \(kvLength); shorten the text or lower max_new_tokens")
        }
        return bucket
    }

    /// [batch, rows, hidden] -> [batch, bucket, hidden], zero rows after each batch row's own.
    public static func padded(_ embeds: [Float], batch: Int, rows: Int, bucket: Int, hidden: Int) -> [Float] {
        var out = [Float](repeating: 0, count: batch * bucket * hidden)
        for b in 0..<batch {
            for i in 0..<(rows * hidden) { out[b * bucket * hidden + i] = embeds[b * rows * hidden + i] }
        }
        return out
    }
}
