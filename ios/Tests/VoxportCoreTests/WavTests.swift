import Foundation
import XCTest
import VoxportCore

final class WavTests: XCTestCase {
    struct Expect: Decodable {
        let samples: String
        let count: Int
        let sample_rate: Int
        let pcm16: String
    }

    /// Byte for byte what `audio_io.write_wav` (libsndfile) wrote for the same samples,
    /// including clipped, halfway-rounding and edge values.
    func testPCM16EqualsPythonsWriter() throws {
        let e = try Fixtures.decode(Expect.self, "audio_expect.json")
        let samples = try RawF32.read(Fixtures.url(e.samples))
        XCTAssertEqual(samples.count, e.count)
        let mine = try WavWriter.pcm16(samples, sampleRate: e.sample_rate)
        XCTAssertEqual(mine, try Fixtures.data(e.pcm16))
    }

    func testNonFiniteSamplesAreRefused() {
        XCTAssertEqual(expectError { _ = try WavWriter.pcm16([0, .nan], sampleRate: 24000) }?.kind, .user)
        XCTAssertEqual(expectError { _ = try WavWriter.float32([.infinity], sampleRate: 24000) }?.kind, .user)
        XCTAssertEqual(expectError { _ = try WavWriter.pcm16([0], sampleRate: 0) }?.kind, .user)
    }

    func testFloat32WavLayout() throws {
        let samples: [Float] = [0, 0.25, -1.5, 1e-3]
        let d = [UInt8](try WavWriter.float32(samples, sampleRate: 22050))
        func u32(_ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(d[o + $1]) << (8 * UInt32($1)) } }
        func u16(_ o: Int) -> UInt16 { UInt16(d[o]) | UInt16(d[o + 1]) << 8 }
        XCTAssertEqual(String(decoding: d[0..<4], as: UTF8.self), "RIFF")
        XCTAssertEqual(Int(u32(4)), d.count - 8)
        XCTAssertEqual(u32(16), 18)  // fmt chunk with cbSize
        XCTAssertEqual(u16(20), 3)  // IEEE float
        XCTAssertEqual(u16(22), 1)
        XCTAssertEqual(u32(24), 22050)
        XCTAssertEqual(u32(28), 22050 * 4)
        XCTAssertEqual(u16(34), 32)
        XCTAssertEqual(String(decoding: d[38..<42], as: UTF8.self), "fact")
        XCTAssertEqual(u32(46), 4)  // frames
        XCTAssertEqual(String(decoding: d[50..<54], as: UTF8.self), "data")
        XCTAssertEqual(u32(54), 16)
        XCTAssertEqual(try RawF32.decode(Data(d[58...])), samples)
    }

    func testWritesFilesAndRawF32RoundTrip() throws {
        let dir = try Fixtures.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let samples: [Float] = [1, -0.5, .pi, -0.0]
        try RawF32.write(samples, to: dir.appendingPathComponent("x.f32"))
        XCTAssertEqual(try RawF32.read(dir.appendingPathComponent("x.f32")).map(\.bitPattern), samples.map(\.bitPattern))
        try WavWriter.writePCM16(samples, sampleRate: 24000, to: dir.appendingPathComponent("x.wav"))
        XCTAssertEqual(try Data(contentsOf: dir.appendingPathComponent("x.wav")).count, 44 + 8)
        XCTAssertEqual(expectError { _ = try RawF32.decode(Data([1, 2, 3])) }?.kind, .malformedFile)
    }
}
