import Foundation

/// Little-endian reads at absolute offsets of a byte buffer, bounds-checked: a truncated or
/// damaged file becomes a `malformedFile` error naming `source`, never a crash.
struct ByteReader {
    let bytes: [UInt8]
    let source: String

    init(_ data: Data, source: String) {
        self.bytes = [UInt8](data)
        self.source = source
    }

    var count: Int { bytes.count }

    func require(_ offset: Int, _ length: Int, _ what: String) throws {
        guard offset >= 0, length >= 0, offset <= bytes.count, length <= bytes.count - offset else {
            throw VoxportError(
                .malformedFile,
                "\(source): truncated or damaged (\(what) needs bytes \(offset)..<\(offset + length) of \(bytes.count))")
        }
    }

    func u16(_ offset: Int) throws -> UInt16 {
        try require(offset, 2, "a 16-bit field")
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    func u32(_ offset: Int) throws -> UInt32 {
        try require(offset, 4, "a 32-bit field")
        var v: UInt32 = 0
        for i in (0..<4).reversed() { v = v << 8 | UInt32(bytes[offset + i]) }
        return v
    }

    func u64(_ offset: Int) throws -> UInt64 {
        try require(offset, 8, "a 64-bit field")
        var v: UInt64 = 0
        for i in (0..<8).reversed() { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    func slice(_ offset: Int, _ length: Int, _ what: String) throws -> ArraySlice<UInt8> {
        try require(offset, length, what)
        return bytes[offset..<(offset + length)]
    }

    /// An offset or size read from the file, as an Int that fits this buffer's arithmetic.
    func int(_ v: UInt64, _ what: String) throws -> Int {
        guard v <= UInt64(Int.max / 2) else {
            throw VoxportError(.malformedFile, "\(source): \(what) \(v) is out of range")
        }
        return Int(v)
    }
}
