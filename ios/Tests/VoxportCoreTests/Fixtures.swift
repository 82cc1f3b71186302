import Foundation
import VoxportCore

/// The fixture folder Python writes (`python -m conversion.swift_fixtures ios/Tests/Fixtures`),
/// copied into this test bundle by Package.swift.
enum Fixtures {
    static let root: URL = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!

    static func url(_ rel: String) -> URL { root.appendingPathComponent(rel) }

    static func data(_ rel: String) throws -> Data { try Data(contentsOf: url(rel)) }

    static func decode<T: Decodable>(_: T.Type, _ rel: String) throws -> T {
        try JSONDecoder().decode(T.self, from: data(rel))
    }

    /// A scratch folder removed when the test ends.
    static func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("voxport-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}

/// splitmix64 bytes, the same stream `swift_fixtures.splitmix64_bytes` hashes.
func splitmix64Bytes(seed: UInt64, count: Int) -> [UInt8] {
    var out = [UInt8]()
    out.reserveCapacity(count + 8)
    var state = seed
    while out.count < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: z >> (8 * UInt64(i)))) }
    }
    return Array(out.prefix(count))
}

/// The VoxportError `body` throws; nil if it throws nothing or something else.
func expectError(_ body: () throws -> Void) -> VoxportError? {
    do {
        try body()
    } catch let e as VoxportError {
        return e
    } catch {
        return nil
    }
    return nil
}
