import Foundation

/// Where a publisher's processors differ from transformers' `generate`
/// (`conversion/core/host/sampling.py`, `SamplingOrder`); all false is transformers' order.
public struct SamplingOrder: Sendable, Equatable {
    public var filterOnRawScores = false
    public var minPBeforeTopP = false
    public var topPOverWholeVocab = false
    public var topPDropsCrossingToken = false
    /// The repetition penalty last, on the tempered scores the filters kept (-inf stays -inf).
    public var penaltyAfterFilters = false

    public init(filterOnRawScores: Bool = false, minPBeforeTopP: Bool = false,
                topPOverWholeVocab: Bool = false, topPDropsCrossingToken: Bool = false,
                penaltyAfterFilters: Bool = false) {
        self.filterOnRawScores = filterOnRawScores
        self.minPBeforeTopP = minPBeforeTopP
        self.topPOverWholeVocab = topPOverWholeVocab
        self.topPDropsCrossingToken = topPDropsCrossingToken
        self.penaltyAfterFilters = penaltyAfterFilters
    }

    /// `conversion/chatterbox/sampling.py` CHATTERBOX_ORDER: min-p runs before top-p.
    public static let chatterbox = SamplingOrder(minPBeforeTopP: true)
}

/// What to do to the logits before the draw (`SamplingConfig`): nil / 1.0 / 0 mean off.
public struct SamplingConfig: Sendable, Equatable {
    public var temperature: Float = 1
    public var topK: Int? = nil
    public var topP: Float? = nil
    public var minP: Float? = nil
    public var repetitionPenalty: Float = 1
    public var cfgWeight: Float? = nil
    public var order = SamplingOrder()

    public init(temperature: Float = 1, topK: Int? = nil, topP: Float? = nil, minP: Float? = nil,
                repetitionPenalty: Float = 1, cfgWeight: Float? = nil, order: SamplingOrder = SamplingOrder()) {
        self.temperature = temperature
        self.topK = topK
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.cfgWeight = cfgWeight
        self.order = order
    }

    var usesTopK: Bool { (topK ?? 0) > 0 }
    var usesTopP: Bool { topP.map { $0 < 1 } ?? false }
    var usesMinP: Bool { (minP ?? 0) != 0 }
    var usesPenalty: Bool { repetitionPenalty != 1 }
}

/// The host form of `conversion/core/host/sampling.py` on one row, float32 throughout so that each
/// processor gives numpy's value bit for bit: CFG, repetition penalty, temperature, then the
/// filters (top-k, min-p / top-p in `order`; the penalty after them when the order says so), and
/// the exponential-race draw from uniforms.
///
/// Reductions follow numpy's order (its `sum` is pairwise: `PairwiseSum`; `cumsum` is
/// sequential). `exp`/`log` are the platform's, which may differ from numpy's SIMD ones by an
/// ulp: that can only move a filter decision sitting exactly on its threshold.
public enum Sampling {
    /// The clip that keeps -log(u) finite (`U_MIN`, `U_MAX`).
    public static let uMin = Float.leastNormalMagnitude
    public static let uMax: Float = 1 - 0x1p-24

    /// cond + w * (cond - uncond).
    public static func cfgCombine(_ cond: [Float], _ uncond: [Float], weight: Float) -> [Float] {
        var out = cond
        for i in out.indices { out[i] = cond[i] + weight * (cond[i] - uncond[i]) }
        return out
    }

    /// transformers' rule: a seen token's logit times the penalty when negative, divided by it
    /// otherwise (once, however often seen); -1 is padding.
    public static func repetitionPenalty(_ logits: [Float], previous: [Int], penalty: Float) throws -> [Float] {
        var out = logits
        var seen = [Bool](repeating: false, count: logits.count)
        for t in previous where t != -1 {
            guard t >= 0, t < logits.count else {
                throw SamplingError("previous_tokens must be in [-1, \(logits.count)), got \(t)")
            }
            seen[t] = true
        }
        for i in out.indices where seen[i] { out[i] = out[i] < 0 ? out[i] * penalty : out[i] / penalty }
        return out
    }

    /// The masked, temperature-scaled scores (`process_logits` with `candidates` as given;
    /// -inf where a filter removed a token).
    public static func processLogits(
        _ logits: [Float], config: SamplingConfig, previous: [Int]? = nil, uncond: [Float]? = nil,
        candidates: Int? = nil
    ) throws -> [Float] {
        var x = logits
        if let w = config.cfgWeight {
            guard let uncond, uncond.count == x.count else { throw SamplingError("cfg_weight is set: uncond_logits is required") }
            x = cfgCombine(x, uncond, weight: w)
        }
        x = try penalty(x, config: config, previous: previous, afterFilters: false)
        let s = x.map { $0 / config.temperature }
        let f = config.order.filterOnRawScores ? x : s
        var keep = [Bool](repeating: true, count: x.count)
        var rank: [Int] = []
        var byScore: [Int] = []
        if config.usesTopK || config.usesTopP {
            byScore = stableDescending(f)
            rank = [Int](repeating: 0, count: f.count)
            for (r, i) in byScore.enumerated() { rank[i] = r }
            if config.usesTopK, let k = config.topK { for i in keep.indices where rank[i] >= k { keep[i] = false } }
        }
        if config.usesMinP, config.order.minPBeforeTopP { applyMinP(s, config.minP!, &keep) }
        if config.usesTopP {
            topP(f, config: config, byScore: byScore, rank: rank, keep: &keep)
            if let candidates, !config.usesTopK { for i in keep.indices where rank[i] >= candidates { keep[i] = false } }
        }
        if config.usesMinP, !config.order.minPBeforeTopP { applyMinP(s, config.minP!, &keep) }
        return try penalty(zip(s, keep).map { $1 ? $0 : -.infinity }, config: config, previous: previous, afterFilters: true)
    }

    /// The repetition penalty if the order puts it at this stage (before or after the filters).
    static func penalty(_ x: [Float], config: SamplingConfig, previous: [Int]?, afterFilters: Bool) throws -> [Float] {
        guard config.usesPenalty, config.order.penaltyAfterFilters == afterFilters else { return x }
        guard let previous else { throw SamplingError("repetition_penalty != 1: previous_tokens is required") }
        return try repetitionPenalty(x, previous: previous, penalty: config.repetitionPenalty)
    }

    /// min-p on the tempered scores: keep exp(s - max s) >= min_p.
    static func applyMinP(_ s: [Float], _ minP: Float, _ keep: inout [Bool]) {
        let top = s.max() ?? 0
        for i in s.indices where !(exp(s[i] - top) >= minP) { keep[i] = false }
    }

    /// top-p over the sorted scores: probabilities normalised over what is still in play (or the
    /// whole vocabulary), a token kept while the mass before it is < top_p.
    static func topP(_ f: [Float], config: SamplingConfig, byScore: [Int], rank: [Int], keep: inout [Bool]) {
        let top = f.max() ?? 0
        let basis = config.order.topPOverWholeVocab ? [Bool](repeating: true, count: f.count) : keep
        let r = f.indices.map { basis[$0] ? exp(f[$0] - top) : 0 }
        let total = PairwiseSum.float32(r)
        let limit = config.topP!
        var cum: Float = 0
        var keptSorted = [Bool](repeating: false, count: f.count)
        for (pos, i) in byScore.enumerated() {
            let p = r[i] / total
            cum += p
            keptSorted[pos] = pos == 0 || (config.order.topPDropsCrossingToken ? cum <= limit : (cum - p) < limit)
        }
        for i in f.indices where !keptSorted[rank[i]] { keep[i] = false }
    }

    /// Indices by descending score, ties in index order (numpy's stable argsort of -f).
    static func stableDescending(_ f: [Float]) -> [Int] {
        f.indices.sorted { a, b in f[a] > f[b] || (f[a] == f[b] && a < b) }
    }

    /// argmax(exp(score - max) / -log(clip(u))): the exponential-race draw (first index on a tie).
    public static func gumbelArgmax(_ scores: [Float], uniforms: [Float]) throws -> Int {
        guard scores.count == uniforms.count else {
            throw SamplingError("uniforms: \(uniforms.count) values for \(scores.count) scores")
        }
        let top = scores.max() ?? 0
        var best = 0
        var bestW = -Float.infinity
        for i in scores.indices {
            let u = min(max(uniforms[i], uMin), uMax)
            let w = exp(scores[i] - top) / -log(u)
            if w > bestW || (i == 0) { (best, bestW) = (i, w) }
        }
        return best
    }

    /// One draw: `processLogits` then `gumbelArgmax`.
    public static func sample(
        _ logits: [Float], uniforms: [Float], config: SamplingConfig, previous: [Int]? = nil,
        uncond: [Float]? = nil, candidates: Int? = nil
    ) throws -> Int {
        try gumbelArgmax(
            processLogits(logits, config: config, previous: previous, uncond: uncond, candidates: candidates),
            uniforms: uniforms)
    }
}

/// numpy's float32 `sum` of a contiguous row: pairwise, 8 accumulators per block of <= 128
/// (`pairwise_sum` in numpy's loops_utils), so a normaliser rounds as numpy's does.
public enum PairwiseSum {
    public static func float32(_ a: [Float]) -> Float {
        a.isEmpty ? 0 : a.withUnsafeBufferPointer { sum($0.baseAddress!, a.count) }
    }

    static func sum(_ a: UnsafePointer<Float>, _ n: Int) -> Float {
        if n < 8 {
            var res: Float = 0
            for i in 0..<n { res += a[i] }
            return res
        }
        if n <= 128 {
            var r = (0..<8).map { a[$0] }
            var i = 8
            while i < n - n % 8 {
                for j in 0..<8 { r[j] += a[i + j] }
                i += 8
            }
            var res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            while i < n {
                res += a[i]
                i += 1
            }
            return res
        }
        var n2 = n / 2
        n2 -= n2 % 8
        return sum(a, n2) + sum(a + n2, n - n2)
    }
}

/// A sampling call given arguments the Python host would refuse.
public struct SamplingError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
