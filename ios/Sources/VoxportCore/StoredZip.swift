import Foundation

/// The zip subset `np.savez` writes: stored (uncompressed) members, listed by the central
/// directory. numpy forces zip64 on every member, so each local header has 0xFFFFFFFF sizes and a
/// zip64 extra field (id 0x0001); past 4 GiB the central directory and end record go zip64 too.
/// All of those are parsed here; compressed (`np.savez_compressed`) or encrypted members are refused.
struct StoredZip {
    struct Member {
        let name: String
        let data: ArraySlice<UInt8>
    }

    let members: [Member]

    init(_ data: Data, source: String) throws {
        let r = ByteReader(data, source: source)
        let (count, directoryOffset) = try Self.endRecord(r)
        var members: [Member] = []
        var pos = directoryOffset
        for _ in 0..<count {
            guard try r.u32(pos) == 0x0201_4B50 else {
                throw VoxportError(.malformedFile, "\(source): damaged zip central directory at byte \(pos)")
            }
            let flags = try r.u16(pos + 8)
            let method = try r.u16(pos + 10)
            let crc = try r.u32(pos + 16)
            var compressed = UInt64(try r.u32(pos + 20))
            var size = UInt64(try r.u32(pos + 24))
            let nameLen = Int(try r.u16(pos + 28))
            let extraLen = Int(try r.u16(pos + 30))
            let commentLen = Int(try r.u16(pos + 32))
            var offset = UInt64(try r.u32(pos + 42))
            let name = String(decoding: try r.slice(pos + 46, nameLen, "a member name"), as: UTF8.self)
            // zip64 extra: the 0xFFFFFFFF fields, in the order size, compressed size, offset.
            if let z = try Self.zip64Extra(r, at: pos + 46 + nameLen, length: extraLen) {
                var i = 0
                if size == 0xFFFF_FFFF { size = try z.field(i); i += 1 }
                if compressed == 0xFFFF_FFFF { compressed = try z.field(i); i += 1 }
                if offset == 0xFFFF_FFFF { offset = try z.field(i) }
            }
            if flags & 1 != 0 {
                throw VoxportError(.malformedFile, "\(source): member \(name) is encrypted")
            }
            if method != 0 {
                throw VoxportError(
                    .malformedFile,
                    "\(source): member \(name) is compressed (method \(method)); np.savez_compressed archives "
                        + "are not supported, save with np.savez")
            }
            let dataStart = try Self.localData(r, at: try r.int(offset, "member offset"), name: name, size: size)
            let bytes = try r.slice(dataStart, try r.int(size, "member size"), "member \(name)")
            guard CRC32.checksum(bytes) == crc else {
                throw VoxportError(.malformedFile, "\(source): member \(name) fails its CRC-32 check (damaged file)")
            }
            members.append(Member(name: name, data: bytes))
            pos += 46 + nameLen + extraLen + commentLen
        }
        self.members = members
    }

    /// (entry count, central directory offset), from the zip64 end record when there is one.
    private static func endRecord(_ r: ByteReader) throws -> (Int, Int) {
        var eocd = r.count - 22
        let lowest = max(0, r.count - 22 - 0xFFFF)  // the end record may carry a comment
        while eocd >= lowest, (try? r.u32(eocd)) != 0x0605_4B50 { eocd -= 1 }
        guard eocd >= lowest else {
            throw VoxportError(.malformedFile, "\(r.source): not a zip archive (no end of central directory)")
        }
        if eocd >= 20, try r.u32(eocd - 20) == 0x0706_4B50 {  // zip64 end-of-central-directory locator
            let rec = try r.int(try r.u64(eocd - 20 + 8), "zip64 end record offset")
            guard try r.u32(rec) == 0x0606_4B50 else {
                throw VoxportError(.malformedFile, "\(r.source): damaged zip64 end record")
            }
            return (try r.int(try r.u64(rec + 32), "entry count"), try r.int(try r.u64(rec + 48), "directory offset"))
        }
        return (Int(try r.u16(eocd + 10)), Int(try r.u32(eocd + 16)))
    }

    /// Start of a member's bytes: after its local header, name and extra field. The local sizes
    /// (zip64 extra when 0xFFFFFFFF) must agree with the central directory's unless a data
    /// descriptor follows (flag bit 3: sizes are zero here).
    private static func localData(_ r: ByteReader, at offset: Int, name: String, size: UInt64) throws -> Int {
        guard try r.u32(offset) == 0x0403_4B50 else {
            throw VoxportError(.malformedFile, "\(r.source): damaged local header of member \(name)")
        }
        let flags = try r.u16(offset + 6)
        var localSize = UInt64(try r.u32(offset + 22))
        let nameLen = Int(try r.u16(offset + 26))
        let extraLen = Int(try r.u16(offset + 28))
        if localSize == 0xFFFF_FFFF, let z = try zip64Extra(r, at: offset + 30 + nameLen, length: extraLen) {
            localSize = try z.field(0)
        }
        if flags & 0x08 == 0, localSize != size {
            throw VoxportError(
                .malformedFile, "\(r.source): member \(name): local size \(localSize) != directory size \(size)")
        }
        return offset + 30 + nameLen + extraLen
    }

    private struct Zip64Fields {
        let r: ByteReader
        let start: Int
        let length: Int

        func field(_ i: Int) throws -> UInt64 {
            guard (i + 1) * 8 <= length else {
                throw VoxportError(.malformedFile, "\(r.source): zip64 extra field too short")
            }
            return try r.u64(start + i * 8)
        }
    }

    private static func zip64Extra(_ r: ByteReader, at start: Int, length: Int) throws -> Zip64Fields? {
        var p = start
        while p + 4 <= start + length {
            let id = try r.u16(p)
            let size = Int(try r.u16(p + 2))
            if id == 0x0001 { return Zip64Fields(r: r, start: p + 4, length: size) }
            p += 4 + size
        }
        return nil
    }
}

/// CRC-32 (the zip polynomial), to catch a damaged member before its bytes are trusted.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1 != 0) ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return c ^ 0xFFFF_FFFF
    }
}
