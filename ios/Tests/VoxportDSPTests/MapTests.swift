import XCTest
import VoxportDSP

/// Interpolation and cumsum are bitwise against torch (SWIFT.md's recipes, re-checked here).
final class MapTests: XCTestCase {
    func testLinearInterpolationEqualsTorchBitwise() throws {
        let cases = try Fixtures.dsp().interpolate
        XCTAssertEqual(cases.count, 6)
        for c in cases {
            let x = try Fixtures.f32(c.input)
            let want = try Fixtures.f32(c.output)
            XCTAssertEqual(Resample.outputLength(x.count, scaleFactor: c.scale_factor!), c.output_length, c.name)
            let got = Resample.linear(x, scaleFactor: c.scale_factor!)
            XCTAssertEqual(got.count, want.count, c.name)
            XCTAssertEqual(bitwiseMismatches(got, want), [], c.name)
        }
    }

    func testCumsumEqualsTorchBitwise() throws {
        let cases = try Fixtures.dsp().cumsum
        XCTAssertEqual(cases.count, 2)
        for c in cases {
            let got = Accumulate.cumsum(try Fixtures.f32(c.input))
            let want = try Fixtures.f32(c.output)
            XCTAssertEqual(got.count, c.length)
            XCTAssertEqual(bitwiseMismatches(got, want), [], c.name)
        }
    }

    func testEdgeCases() {
        XCTAssertEqual(Resample.linear([], scaleFactor: 300), [])
        XCTAssertEqual(Resample.linear([2], scaleFactor: 3), [2, 2, 2])
        XCTAssertEqual(Accumulate.cumsum([]), [])
    }
}
