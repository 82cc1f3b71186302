import XCTest
import VoxportDSP

final class WindowTests: XCTestCase {
    /// The models' float32 Hann (float64, rounded once) is reproduced bit for bit.
    func testHannEqualsFloat64TorchRoundedBitwise() throws {
        let f = try Fixtures.dsp()
        XCTAssertEqual(f.hann.count, 12)
        for h in f.hann {
            let want = try Fixtures.f32(h.file)
            let got = Windows.hann(h.n, periodic: h.periodic)
            XCTAssertEqual(got.count, want.count)
            XCTAssertEqual(bitwiseMismatches(got, want), [], "n=\(h.n) periodic=\(h.periodic)")
        }
    }

    /// Plain torch.hann_window computes in float32 (not float64, whatever SWIFT.md says): it is
    /// within a few ulp of the rounded float64 window (1.8e-7 at most at n = 1024), not equal.
    func testTorchFloat32HannIsWithinAFewUlp() throws {
        var differs = 0
        for h in try Fixtures.dsp().hann {
            let want = try Fixtures.f32(h.torch_float32_file)
            let got = Windows.hann(h.n, periodic: h.periodic)
            XCTAssertEqual(got.count, want.count)
            for (a, b) in zip(got, want) { XCTAssertLessThanOrEqual(abs(a - b), 2.5e-7, "n=\(h.n)") }
            differs += bitwiseMismatches(got, want).count
        }
        XCTAssertGreaterThan(differs, 0)  // the two windows really are different
    }

    func testFullWindowCentresAndPads() throws {
        let w = try Windows.full(nFFT: 20, winLength: 15, window: [Float](repeating: 1, count: 15))
        XCTAssertEqual(w.count, 20)
        XCTAssertEqual(Array(w.prefix(2)), [0, 0])
        XCTAssertEqual(Array(w.suffix(3)), [0, 0, 0])  // the odd zero goes right, as in torch
        XCTAssertEqual(try Windows.full(nFFT: 4), [1, 1, 1, 1])  // nil window: rectangular
        XCTAssertThrowsError(try Windows.full(nFFT: 16, winLength: 17))
        XCTAssertThrowsError(try Windows.full(nFFT: 16, winLength: 8, window: [1, 2]))
    }
}
