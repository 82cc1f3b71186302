import Foundation

/// `torch.stft(..., return_complex=True)` / `torch.istft` for one signal, mirroring the host
/// functions of `conversion/core/host/dsp.py` (stft, istft, window_envelope, magnitude_phase, polar).
/// Computed in float64, returned at float32, as that host does.
public enum Spectral {
    public enum PadMode: Sendable {
        case reflect, constant, replicate
    }

    /// torch.istft refuses windows whose overlap-added square drops below this (NOLA).
    static let nolaEps = 1e-11

    /// Onesided STFT of `x`: [`nFFT/2 + 1` bins, frames]. `window` has `winLength` samples
    /// (nil: rectangular, torch's default), centred in the frame; `center` pads `nFFT/2` on
    /// both sides with `padMode`; `normalized` divides by sqrt(nFFT).
    public static func stft(
        _ x: [Float], nFFT: Int, hop: Int, winLength: Int? = nil, window: [Float]? = nil,
        center: Bool = true, padMode: PadMode = .reflect, normalized: Bool = false
    ) throws -> ComplexSpectrum {
        guard nFFT > 0, hop > 0 else { throw DSPError("n_fft and hop must be positive, got \(nFFT), \(hop)") }
        let w = try Windows.full(nFFT: nFFT, winLength: winLength, window: window)
        let xd = center ? try pad(x.map(Double.init), nFFT / 2, padMode) : x.map(Double.init)
        guard xd.count >= nFFT else {
            throw DSPError("signal of \(xd.count) samples is shorter than n_fft=\(nFFT)")
        }
        let frames = 1 + (xd.count - nFFT) / hop
        let basis = DFTBasis(nFFT)
        let scale = normalized ? 1.0 / Double(nFFT).squareRoot() : 1.0
        var re = [Float](repeating: 0, count: basis.bins * frames)
        var im = [Float](repeating: 0, count: basis.bins * frames)
        var frame = [Double](repeating: 0, count: nFFT)
        for t in 0..<frames {
            for j in 0..<nFFT { frame[j] = xd[t * hop + j] * w[j] }
            for k in 0..<basis.bins {
                var sr = 0.0, si = 0.0
                let row = k * nFFT
                for j in 0..<nFFT {
                    sr += frame[j] * basis.cos[row + j]
                    si -= frame[j] * basis.sin[row + j]
                }
                re[k * frames + t] = Float(sr * scale)
                im[k * frames + t] = basis.isRealBin(k) ? 0 : Float(si * scale)
            }
        }
        return ComplexSpectrum(bins: basis.bins, frames: frames, real: re, imag: im)
    }

    /// Inverse of a onesided spectrum: windowed inverse DFT per frame, overlap-add, divided by
    /// the overlap-added window square, `center` padding trimmed; `length` trims or zero-pads
    /// the end like torch. The imaginary parts of DC (and Nyquist, even nFFT) are ignored, as
    /// irfft ignores them. Throws where torch raises its NOLA error.
    public static func istft(
        _ spec: ComplexSpectrum, nFFT: Int, hop: Int, winLength: Int? = nil, window: [Float]? = nil,
        center: Bool = true, normalized: Bool = false, length: Int? = nil
    ) throws -> [Float] {
        let basis = DFTBasis(nFFT)
        guard spec.bins == basis.bins else {
            throw DSPError("expected \(basis.bins) onesided bins, got \(spec.bins)")
        }
        guard hop > 0 else { throw DSPError("hop must be positive, got \(hop)") }
        guard spec.frames > 0 else { throw DSPError("istft needs at least one frame") }
        let w = try Windows.full(nFFT: nFFT, winLength: winLength, window: window)
        let frames = spec.frames
        let full = nFFT + hop * (frames - 1)
        var y = [Double](repeating: 0, count: max(full, 0))
        let gain = normalized ? Double(nFFT).squareRoot() : 1.0
        // irfft weights: a bin other than DC/Nyquist stands for a conjugate pair.
        let weight = (0..<basis.bins).map { basis.isRealBin($0) ? 1.0 / Double(nFFT) : 2.0 / Double(nFFT) }
        for t in 0..<frames {
            for j in 0..<nFFT {
                var acc = 0.0
                for k in 0..<basis.bins {
                    let (re, im) = spec[k, t]
                    let term = Double(re) * basis.cos[k * nFFT + j]
                        - (basis.isRealBin(k) ? 0 : Double(im) * basis.sin[k * nFFT + j])
                    acc += weight[k] * term
                }
                y[t * hop + j] += acc * gain * w[j]
            }
        }
        let env = windowEnvelope(window: w, hop: hop, frames: frames)
        let start = center ? nFFT / 2 : 0
        let end = min(length.map { start + $0 } ?? (center ? full - nFFT / 2 : full), full)
        var out: [Float] = []
        if end > start {
            if env[start..<end].contains(where: { abs($0) < nolaEps }) {
                throw DSPError("istft: window overlap-add envelope vanishes (NOLA fails)")
            }
            out = (start..<end).map { Float(y[$0] / env[$0]) }
        }
        if let length, out.count < length { out += [Float](repeating: 0, count: length - out.count) }
        return out
    }

    /// `dsp.window_envelope`: overlap-added `window**2` over `frames` frames (untrimmed),
    /// the iSTFT normaliser.
    public static func windowEnvelope(window: [Double], hop: Int, frames: Int) -> [Double] {
        guard frames > 0 else { return [] }
        var env = [Double](repeating: 0, count: (frames - 1) * hop + window.count)
        for t in 0..<frames {
            for (j, v) in window.enumerated() { env[t * hop + j] += v * v }
        }
        return env
    }

    /// (|spec|, angle(spec)) as Kokoro's TorchSTFT.transform returns them.
    public static func magnitudePhase(_ spec: ComplexSpectrum) -> (magnitude: [Float], phase: [Float]) {
        var mag = [Float](repeating: 0, count: spec.real.count)
        var phase = [Float](repeating: 0, count: spec.real.count)
        for i in 0..<spec.real.count {
            let re = Double(spec.real[i]), im = Double(spec.imag[i])
            mag[i] = Float((re * re + im * im).squareRoot())
            phase[i] = Float(atan2(im, re))
        }
        return (mag, phase)
    }

    /// `magnitude * exp(1j * phase)`: the inverse of `magnitudePhase`.
    public static func polar(magnitude: [Float], phase: [Float], bins: Int, frames: Int) -> ComplexSpectrum {
        precondition(magnitude.count == bins * frames && phase.count == bins * frames, "polar: size mismatch")
        var re = [Float](repeating: 0, count: magnitude.count)
        var im = [Float](repeating: 0, count: magnitude.count)
        for i in 0..<magnitude.count {
            let m = Double(magnitude[i]), p = Double(phase[i])
            re[i] = Float(m * cos(p))
            im[i] = Float(m * sin(p))
        }
        return ComplexSpectrum(bins: bins, frames: frames, real: re, imag: im)
    }

    /// torch's `center` padding. Reflect needs a pad shorter than the signal, as torch does.
    static func pad(_ x: [Double], _ p: Int, _ mode: PadMode) throws -> [Double] {
        guard p > 0 else { return x }
        let n = x.count
        switch mode {
        case .constant:
            return [Double](repeating: 0, count: p) + x + [Double](repeating: 0, count: p)
        case .replicate:
            guard n > 0 else { throw DSPError("replicate padding needs a non-empty signal") }
            return [Double](repeating: x[0], count: p) + x + [Double](repeating: x[n - 1], count: p)
        case .reflect:
            guard p < n else {
                throw DSPError("reflect padding of \(p) needs a signal longer than \(p) samples, got \(n)")
            }
            return (0..<p).map { x[p - $0] } + x + (0..<p).map { x[n - 2 - $0] }
        }
    }
}
