/// Running sums as the graphs' hosts need them.
public enum Accumulate {
    /// `torch.cumsum(x, 0)` for float32, bit for bit: torch's CPU kernel accumulates in float64
    /// and rounds each partial sum to float32 (measured; SWIFT.md). A Float running sum would
    /// drift from it (Kokoro's phase is a cumsum of f0/sr over tens of thousands of samples).
    public static func cumsum(_ x: [Float]) -> [Float] {
        var acc = 0.0
        return x.map { v in
            acc += Double(v)
            return Float(acc)
        }
    }
}
