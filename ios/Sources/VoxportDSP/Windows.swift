import Foundation

/// Analysis/synthesis windows as the project's host builds them (`conversion/core/host/dsp.py`).
public enum Windows {
    /// `dsp.hann_window(n, periodic)`: the Hann window in float64 (periodic = scipy's
    /// `fftbins=True`, the one torch and the vocoders use).
    public static func hannDouble(_ n: Int, periodic: Bool = true) -> [Double] {
        if n <= 0 { return [] }
        if n == 1 { return [1] }
        let denom = Double(periodic ? n : n - 1)
        return (0..<n).map { 0.5 - 0.5 * cos(2.0 * Double.pi * Double($0) / denom) }
    }

    /// The float32 Hann window the models hold: computed in float64, rounded once, so it equals
    /// `dsp.hann_window(n).astype(np.float32)`, scipy's `get_window("hann", n).astype(float32)`
    /// and `torch.hann_window(n, dtype=torch.float64).float()` bit for bit. (Plain
    /// `torch.hann_window(n)` computes in float32 and differs from it by up to 1-2 ulp.)
    public static func hann(_ n: Int, periodic: Bool = true) -> [Float] {
        hannDouble(n, periodic: periodic).map { Float($0) }
    }

    /// `dsp.full_window`: the length-`nFFT` float64 window torch uses internally. `window == nil`
    /// is rectangular (torch's default, not Hann); a window shorter than `nFFT` is centred and
    /// zero-padded, the odd zero on the right.
    public static func full(nFFT: Int, winLength: Int? = nil, window: [Float]? = nil) throws -> [Double] {
        let win = winLength ?? nFFT
        guard win > 0, win <= nFFT else {
            throw DSPError("win_length must be in (0, n_fft=\(nFFT)], got \(win)")
        }
        let w: [Double]
        if let window {
            guard window.count == win else {
                throw DSPError("window has \(window.count) samples, expected win_length=\(win)")
            }
            w = window.map(Double.init)
        } else {
            w = [Double](repeating: 1, count: win)
        }
        let left = (nFFT - win) / 2
        return [Double](repeating: 0, count: left) + w + [Double](repeating: 0, count: nFFT - win - left)
    }
}

/// A DSP call given arguments torch would refuse; `message` says which and why.
public struct DSPError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
