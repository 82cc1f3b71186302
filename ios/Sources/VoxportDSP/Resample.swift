/// `F.interpolate(x[None, None], scale_factor=s, mode="linear", align_corners=False)` on one
/// row, bit for bit as torch's CPU kernel computes it (Kokoro's F0 upsample, s = 300).
public enum Resample {
    /// torch's output size: floor(length * scale) in float64.
    public static func outputLength(_ length: Int, scaleFactor: Double) -> Int {
        Int((Double(length) * scaleFactor).rounded(.down))
    }

    public static func linear(_ x: [Float], scaleFactor: Double) -> [Float] {
        let n = x.count
        let m = outputLength(n, scaleFactor: scaleFactor)
        guard n > 0, m > 0 else { return [] }
        // With scale_factor given, torch maps coordinates with 1/scale_factor (not n/m), as float.
        let scale = Float(1.0 / scaleFactor)
        var out = [Float](repeating: 0, count: m)
        for i in 0..<m {
            // src = scale * (i + 0.5) - 0.5 as one fused multiply-add, clamped at 0.
            var src = (-0.5 as Float).addingProduct(scale, Float(i) + 0.5)
            if src < 0 { src = 0 }
            let i0 = min(Int(src.rounded(.down)), n - 1)
            let i1 = i0 + (i0 < n - 1 ? 1 : 0)
            let l1 = min(max(src - Float(i0), 0), 1)
            let l0 = 1 - l1
            out[i] = (x[i1] * l1).addingProduct(x[i0], l0)  // fma(x0, l0, x1 * l1)
        }
        return out
    }
}
