import Foundation

/// cos/sin of 2*pi*k*n/N for the onesided bins (as `dsp._dft_bins`): k*n is reduced mod N in
/// integers first, so angles stay small and the basis is accurate for any frame size. A
/// direct DFT is the right size of tool for the vocoders' n_fft of 16-20; larger frames work,
/// at O(N^2) per frame.
struct DFTBasis {
    let n: Int
    let bins: Int
    let cos: [Double]  // [bins * n]
    let sin: [Double]

    init(_ n: Int) {
        self.n = n
        bins = n / 2 + 1
        var c = [Double](repeating: 0, count: bins * n)
        var s = [Double](repeating: 0, count: bins * n)
        for k in 0..<bins {
            for j in 0..<n {
                let ang = 2.0 * Double.pi * Double((k * j) % n) / Double(n)
                c[k * n + j] = Foundation.cos(ang)
                s[k * n + j] = Foundation.sin(ang)
            }
        }
        cos = c
        sin = s
    }

    /// True where the sine row vanishes analytically (DC; Nyquist for even N): there the
    /// imaginary part is exactly +0, as an FFT gives it (atan2(+0, x<0) = +pi, like torch.angle).
    func isRealBin(_ k: Int) -> Bool { k == 0 || (n % 2 == 0 && k == n / 2) }
}
