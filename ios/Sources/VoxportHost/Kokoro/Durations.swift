import VoxportCore

/// Durations to the token-to-frame alignment (`alignment.py`): the host's share of the
/// publisher's `forward_with_tokens`, in float32 as torch computes it.
public enum Durations {
    /// Whole frames per token: `round_half_even(durations / speed)`, at least 1. `speed` is
    /// rounded to float32 first, as torch does with a Python scalar.
    public static func predDurations(_ durations: [Float], speed: Double = 1.0) throws -> [Int] {
        guard speed.isFinite, speed > 0 else {
            throw VoxportError(.user, "speed must be a positive number, got \(speed)")
        }
        let s = Float(speed)
        return durations.map { max(1, Int((($0 / s).rounded(.toNearestOrEven)))) }
    }

    /// float32 [tokens * frames] one-hot (`aln[i, j] = 1` when frame j belongs to token i;
    /// pad tokens own no frame, pad frames belong to no token) and the frame mask [frames].
    public static func paddedAlignment(_ predDur: [Int], tokens: Int, frames: Int) throws
        -> (aln: [Float], frameMask: [Float])
    {
        let real = predDur.reduce(0, +)
        guard predDur.count <= tokens, real <= frames else {
            throw VoxportError(
                .bucketOverflow,
                "alignment of \(predDur.count) tokens x \(real) frames does not fit the bucket (\(tokens) tokens x "
                    + "\(frames) frames): split the text or slow it less")
        }
        var aln = [Float](repeating: 0, count: tokens * frames)
        var j = 0
        for (i, d) in predDur.enumerated() {
            for _ in 0..<d {
                aln[i * frames + j] = 1
                j += 1
            }
        }
        let mask = (0..<frames).map { $0 < real ? Float(1) : Float(0) }
        return (aln, mask)
    }
}
