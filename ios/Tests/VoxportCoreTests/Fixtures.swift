import Foundation
import VoxportCore
import VoxportTestSupport

/// The fixture folder Python writes (`voxport fixtures swift`), read through VoxportTestSupport.
enum Fixtures {
    static let folder = FixtureFolder()
    static var root: URL { folder.url }

    static func url(_ rel: String) -> URL { folder.url(rel) }
    static func data(_ rel: String) throws -> Data { try folder.data(rel) }
    static func decode<T: Decodable>(_: T.Type, _ rel: String) throws -> T { try folder.json(T.self, rel) }

    /// A fresh scratch folder in this test process's `TestScratch` (removed when it exits).
    static func scratch() throws -> URL { try TestScratch.folder("core-\(UUID().uuidString.prefix(8))") }
}

/// splitmix64 bytes, the same stream `conversion.fixtures.plumbing.splitmix64_bytes` hashes.
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
