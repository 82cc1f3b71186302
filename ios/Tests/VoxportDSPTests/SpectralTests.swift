import Foundation
import XCTest
import VoxportDSP

final class SpectralTests: XCTestCase {
    func testSTFTEqualsTorch() throws {
        let cases = try Fixtures.dsp().stft
        XCTAssertEqual(cases.count, 5)
        for c in cases {
            let x = try Fixtures.f32(c.signal)
            let window = try Fixtures.f32(c.window)
            XCTAssertEqual(x.count, c.length)
            if c.name != "nfft16_torchwin" {  // the project's window is Windows.hann, bitwise
                XCTAssertEqual(bitwiseMismatches(Windows.hann(c.win_length), window), [], c.name)
            }
            let s = try Spectral.stft(x, nFFT: c.n_fft, hop: c.hop, winLength: c.win_length, window: window)
            XCTAssertEqual(s.bins, c.bins, c.name)
            XCTAssertEqual(s.frames, c.frames, c.name)
            XCTAssertLessThanOrEqual(relativeError(s.real, try Fixtures.f32(c.real)), 1e-5, c.name)
            XCTAssertLessThanOrEqual(relativeError(s.imag, try Fixtures.f32(c.imag)), 1e-5, c.name)
        }
    }

    /// Kokoro's (magnitude, phase) form: phase compared where the magnitude makes it meaningful.
    func testMagnitudePhaseEqualsTorch() throws {
        for c in try Fixtures.dsp().stft {
            let s = try Spectral.stft(
                try Fixtures.f32(c.signal), nFFT: c.n_fft, hop: c.hop, winLength: c.win_length,
                window: try Fixtures.f32(c.window))
            let (mag, phase) = Spectral.magnitudePhase(s)
            let wantMag = try Fixtures.f32(c.magnitude)
            let wantPhase = try Fixtures.f32(c.phase)
            XCTAssertLessThanOrEqual(relativeError(mag, wantMag), 1e-5, c.name)
            // Phases agree modulo 2*pi: where the imaginary part is a rounding error away from
            // zero with a negative real part, either side may land on +pi or -pi.
            let floor = (wantMag.max() ?? 0) * 1e-3
            for i in 0..<mag.count where wantMag[i] > floor {
                let d = remainder(Double(phase[i]) - Double(wantPhase[i]), 2 * .pi)
                XCTAssertLessThanOrEqual(abs(d), 1e-4, "\(c.name) #\(i)")
            }
            // DC's imaginary part is exactly +0, so a negative DC has phase +pi, as torch.angle
            // gives it (torch's float32 atan2 rounds pi down one ulp).
            for t in 0..<s.frames where s[0, t].re < 0 {
                XCTAssertEqual(phase[t], wantPhase[t], accuracy: 2.4e-7, "\(c.name) DC \(t)")
                XCTAssertGreaterThan(wantPhase[t], 3.14)
            }
            let back = Spectral.polar(magnitude: mag, phase: phase, bins: s.bins, frames: s.frames)
            XCTAssertLessThanOrEqual(relativeError(back.real, s.real), 1e-6, c.name)
            XCTAssertLessThanOrEqual(relativeError(back.imag, s.imag), 1e-6, c.name)
        }
    }

    func testISTFTEqualsTorch() throws {
        let cases = try Fixtures.dsp().istft
        XCTAssertEqual(cases.count, 10)
        for c in cases {
            let spec = ComplexSpectrum(
                bins: c.bins, frames: c.frames, real: try Fixtures.f32(c.real), imag: try Fixtures.f32(c.imag))
            let y = try Spectral.istft(
                spec, nFFT: c.n_fft, hop: c.hop, winLength: c.win_length, window: try Fixtures.f32(c.window),
                length: c.length)
            let want = try Fixtures.f32(c.output)
            XCTAssertEqual(y.count, c.output_length, c.name)
            XCTAssertLessThanOrEqual(relativeError(y, want), 1e-5, c.name)
        }
    }

    func testRoundTripRecoversTheSignal() throws {
        let c = try Fixtures.dsp().stft[0]
        let x = try Fixtures.f32(c.signal)
        let w = Windows.hann(c.n_fft)
        let s = try Spectral.stft(x, nFFT: c.n_fft, hop: c.hop, window: w)
        let y = try Spectral.istft(s, nFFT: c.n_fft, hop: c.hop, window: w, length: x.count)
        XCTAssertLessThanOrEqual(relativeError(y, x), 1e-6)
    }

    func testRefusalsMatchTorchs() {
        // A zero window: the overlap-added envelope vanishes (torch's NOLA error).
        let spec = ComplexSpectrum(bins: 9, frames: 4, real: .init(repeating: 1, count: 36), imag: .init(repeating: 0, count: 36))
        XCTAssertThrowsError(try Spectral.istft(spec, nFFT: 16, hop: 4, window: .init(repeating: 0, count: 16)))
        XCTAssertThrowsError(try Spectral.istft(spec, nFFT: 20, hop: 5))  // 11 bins expected
        let empty = ComplexSpectrum(bins: 9, frames: 0, real: [], imag: [])
        XCTAssertThrowsError(try Spectral.istft(empty, nFFT: 16, hop: 4))
        // Reflect padding needs a signal longer than n_fft / 2.
        XCTAssertThrowsError(try Spectral.stft([1, 2, 3], nFFT: 16, hop: 4))
        XCTAssertNoThrow(try Spectral.stft([1, 2, 3], nFFT: 16, hop: 4, padMode: .constant))
    }

    func testEnvelopeIsOverlapAddedSquare() {
        XCTAssertEqual(Spectral.windowEnvelope(window: [1, 2], hop: 1, frames: 3), [1, 5, 5, 4])
        XCTAssertEqual(Spectral.windowEnvelope(window: [1, 2], hop: 1, frames: 0), [])
    }
}
