import Foundation
import XCTest
@testable import VoxportCore

final class SHA256Tests: XCTestCase {
    struct Vector: Decodable {
        let kind: String
        let text: String?
        let length: Int?
        let sha256: String
    }

    struct File: Decodable {
        let seed: UInt64
        let first16_hex: String
        let vectors: [Vector]
    }

    private func load() throws -> File { try Fixtures.decode(File.self, "sha256.json") }

    private func bytes(_ v: Vector, seed: UInt64) -> [UInt8] {
        switch v.kind {
        case "ascii": return Array(v.text!.utf8)
        case "repeat_a": return [UInt8](repeating: UInt8(ascii: "a"), count: v.length!)
        default: return splitmix64Bytes(seed: seed, count: v.length!)
        }
    }

    func testGeneratorMatchesPython() throws {
        let f = try load()
        XCTAssertEqual(Hex.string(splitmix64Bytes(seed: f.seed, count: 16)), f.first16_hex)
    }

    func testPlatformHasherMatchesHashlib() throws {
        let f = try load()
        XCTAssertEqual(f.vectors.count, 14)
        for v in f.vectors {
            XCTAssertEqual(SHA256Hasher.hexDigest(Data(bytes(v, seed: f.seed))), v.sha256, "\(v.kind) \(v.length ?? 0)")
        }
    }

    func testPureSwiftMatchesHashlib() throws {
        let f = try load()
        for v in f.vectors {
            var h = PureSHA256()
            bytes(v, seed: f.seed).withUnsafeBytes { h.update($0) }
            XCTAssertEqual(Hex.string(h.finalize()), v.sha256, "\(v.kind) \(v.length ?? 0)")
        }
    }

    func testStreamingInUnevenChunksGivesTheSameDigest() throws {
        let f = try load()
        // The one-shot digest of this input is checked against hashlib above; here a 100 kB
        // prefix, fed in uneven chunks, must give the one-shot digest of the same prefix.
        let data = Array(splitmix64Bytes(seed: f.seed, count: 100_003))
        var oneShot = PureSHA256()
        data.withUnsafeBytes { oneShot.update($0) }
        let whole = Hex.string(oneShot.finalize())
        for chunk in [1, 7, 63, 64, 65, 4097] {
            var pure = PureSHA256()
            var platform = SHA256Hasher()
            var i = 0
            while i < data.count {
                let part = Array(data[i..<min(i + chunk, data.count)])
                part.withUnsafeBytes { pure.update($0) }
                platform.update(part)
                i += chunk
                if chunk == 1 && i > 300 { break }  // byte-at-a-time: a prefix is enough
            }
            let want = chunk == 1 ? Hex.string(Array(SHA256Hasher.digest(Data(data.prefix(i))))) : whole
            XCTAssertEqual(Hex.string(pure.finalize()), want, "chunk \(chunk)")
            XCTAssertEqual(platform.hexDigest(), want, "chunk \(chunk)")
        }
    }

    func testFinalizeDoesNotConsume() {
        var h = SHA256Hasher()
        h.update(Array("ab".utf8))
        _ = h.finalize()
        h.update(Array("c".utf8))
        XCTAssertEqual(h.hexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testHexRoundTrip() {
        XCTAssertEqual(Hex.bytes("00ff10Ab"), [0, 255, 16, 171])
        XCTAssertNil(Hex.bytes("abc"))
        XCTAssertNil(Hex.bytes("zz"))
        XCTAssertEqual(Hex.string([0, 255, 16, 171]), "00ff10ab")
    }
}
