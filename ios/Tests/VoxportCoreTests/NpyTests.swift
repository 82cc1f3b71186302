import Foundation
import XCTest
import VoxportCore

final class NpyTests: XCTestCase {
    struct ArrayExpect: Decodable {
        let descr: String
        let shape: [Int]
        let bytes_hex: String?
        let strings: [String]?
        let bools: [Bool]?
    }

    struct File: Decodable {
        let arrays: [String: ArrayExpect]
        let zip64: [String: ArrayExpect]
        let singles: [String: ArrayExpect]
        let refused: [String: String]

        enum CodingKeys: String, CodingKey {
            case arrays = "arrays.npz", zip64 = "zip64.npz", singles, refused
        }
    }

    private func expect() throws -> File { try Fixtures.decode(File.self, "npy_expect.json") }

    /// Exact comparison: numbers by their little-endian bytes (NaN, -0, subnormals included).
    private func check(_ a: NpyArray, _ e: ArrayExpect, _ name: String) throws {
        XCTAssertEqual(a.dtype.descr, e.descr, name)
        XCTAssertEqual(a.shape, e.shape, name)
        switch a.storage {
        case .string(let s, _): XCTAssertEqual(s, e.strings, name)
        case .bool(let b): XCTAssertEqual(b, e.bools, name)
        case .float32(let v): XCTAssertEqual(Hex.string(le(v.map(\.bitPattern))), e.bytes_hex, name)
        case .float64(let v): XCTAssertEqual(Hex.string(le(v.map(\.bitPattern))), e.bytes_hex, name)
        case .int32(let v): XCTAssertEqual(Hex.string(le(v)), e.bytes_hex, name)
        case .int64(let v): XCTAssertEqual(Hex.string(le(v)), e.bytes_hex, name)
        }
    }

    private func le<T: FixedWidthInteger>(_ v: [T]) -> [UInt8] {
        v.flatMap { x in withUnsafeBytes(of: x.littleEndian) { Array($0) } }
    }

    func testNpzOfEveryDtypeEqualsNumpy() throws {
        let e = try expect()
        let npz = try NpzArchive.load(Fixtures.url("npy/arrays.npz"))
        XCTAssertEqual(npz.names, e.arrays.keys.sorted())
        for (name, want) in e.arrays { try check(try npz.array(name), want, name) }
        XCTAssertEqual(try npz.array("f4_0d").count, 1)
        XCTAssertEqual(try npz.array("f4_0d").float32(), [3.5])
        XCTAssertEqual(try npz.array("f4_empty").count, 0)
        XCTAssertEqual(try npz.array("u_1d").strings()[2], "é☃")
        XCTAssertEqual(try npz.array("i8_1d").int64()[2], Int64.max)
        XCTAssertTrue(try npz.array("f4_2d").float32()[0].sign == .minus)  // -0.0 kept
    }

    /// Central directory with 0xFFFFFFFF sizes and offsets, zip64 end records: the >4 GiB layout.
    func testZip64ArchiveEqualsNumpy() throws {
        let e = try expect()
        let npz = try NpzArchive.load(Fixtures.url("npy/zip64.npz"))
        XCTAssertEqual(npz.names, ["big", "tail"])
        for (name, want) in e.zip64 { try check(try npz.array(name), want, name) }
        XCTAssertEqual(try npz.array("big").float32(), (0..<300).map(Float.init))
    }

    func testNpyHeaderVersions() throws {
        let e = try expect()
        XCTAssertEqual(e.singles.count, 3)
        for (file, want) in e.singles { try check(try Npy.load(Fixtures.url("npy/\(file)")), want, file) }
    }

    func testBundleVoicesFile() throws {
        let npz = try NpzArchive.load(Fixtures.url("bundle/voices.npz"))
        XCTAssertEqual(try npz.array("af_test").shape, [4, 1, 8])
        XCTAssertEqual(try npz.array("af_test").float32().count, 32)
        XCTAssertEqual(try npz.array("names").strings(), ["af_test", "bm_other"])
        XCTAssertEqual(expectError { _ = try npz.array("nope") }?.message, "no array 'nope' in this npz (has: ['af_test', 'names'])")
        XCTAssertEqual(expectError { _ = try npz.array("names").float32() }?.kind, .user)
    }

    func testUnsupportedLayoutsAreRefusedClearly() throws {
        let e = try expect()
        for (file, word) in e.refused {
            let url = Fixtures.url("npy/\(file)")
            let err = expectError { _ = file.hasSuffix(".npz") ? try NpzArchive.load(url).arrays.count : try Npy.load(url).count }
            XCTAssertEqual(err?.kind, .malformedFile, file)
            XCTAssertTrue(err?.message.contains(word) == true, "\(file): \(err?.message ?? "no error")")
        }
    }

    func testDamagedArchivesFailWithoutCrashing() throws {
        let bytes = [UInt8](try Fixtures.data("npy/arrays.npz"))
        for cut in [0, 10, bytes.count / 2, bytes.count - 1] {
            let err = expectError { _ = try NpzArchive.parse(Data(bytes.prefix(cut))) }
            XCTAssertEqual(err?.kind, .malformedFile, "cut at \(cut)")
        }
        var flipped = bytes
        flipped[200] ^= 0xFF  // inside the first member's array bytes
        let err = expectError { _ = try NpzArchive.parse(Data(flipped)) }
        XCTAssertEqual(err?.kind, .malformedFile)
        XCTAssertTrue(err?.message.contains("CRC-32") == true, err?.message ?? "")
        let npy = [UInt8](try Fixtures.data("npy/f4_v1.npy"))
        XCTAssertEqual(expectError { _ = try Npy.parse(Data(npy.dropLast(3))) }?.kind, .malformedFile)
        XCTAssertEqual(expectError { _ = try Npy.parse(Data("not numpy".utf8)) }?.kind, .malformedFile)
    }
}
