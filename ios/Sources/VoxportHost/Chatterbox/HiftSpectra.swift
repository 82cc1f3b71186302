import Foundation
import VoxportDSP

/// The vocoder's two host transforms (`s3gen/hift/host.py` source_stft / inverse_stft, and
/// apply_trim_fade), on VoxportDSP's float64 STFT as the Python host's `conversion/core/host/dsp.py`.
public enum HiftSpectra {
    /// `HiFTGenerator._stft` + cat: [2 bins, N / hop + 1] = cat(real, imag), bins-major.
    public static func sourceSTFT(_ source: [Float], tables: HiftTables) throws -> (values: [Float], frames: Int) {
        let spec = try Spectral.stft(source, nFFT: tables.nFFT, hop: tables.hop, winLength: tables.nFFT, window: tables.window)
        return (spec.real + spec.imag, spec.frames)
    }

    /// `HiFTGenerator._istft` + the clamp: magnitude clipped at 100, polar to complex (float64
    /// products of float32 cos/sin, as numpy's), iSTFT, clamped to +-audio_limit.
    public static func inverse(magnitude: [Float], phase: [Float], frames: Int, tables: HiftTables) throws -> [Float] {
        let bins = tables.bins
        var re = [Float](repeating: 0, count: bins * frames), im = re
        for i in 0..<(bins * frames) {
            let m = Double(min(magnitude[i], HiftTables.magnitudeClip))
            re[i] = Float(m * Double(Float(cos(Double(phase[i])))))
            im[i] = Float(m * Double(Float(sin(Double(phase[i])))))
        }
        let spec = ComplexSpectrum(bins: bins, frames: frames, real: re, imag: im)
        let wav = try Spectral.istft(spec, nFFT: tables.nFFT, hop: tables.hop, winLength: tables.nFFT, window: tables.window)
        let limit = Float(tables.audioLimit)
        return wav.map { min(max($0, -limit), limit) }
    }

    /// S3Token2Wav's fade-in: the wav's first samples times `trim_fade` (a wav shorter than the
    /// fade is faded over its length).
    public static func trimFade(_ wav: [Float], fade: [Float]) -> [Float] {
        var out = wav
        for i in 0..<min(out.count, fade.count) { out[i] *= fade[i] }
        return out
    }
}
