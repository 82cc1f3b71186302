import Foundation

/// Raw little-endian float32 (`.f32`): what the device self-tests dump and Python reads with
/// `np.fromfile(path, "<f4")`, and the format of the test fixtures.
public enum RawF32 {
    public static func encode(_ samples: [Float]) -> Data {
        var d = Data(capacity: samples.count * 4)
        for x in samples { withUnsafeBytes(of: x.bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        return d
    }

    public static func decode(_ data: Data, source: String = "f32") throws -> [Float] {
        guard data.count % 4 == 0 else {
            throw VoxportError(.malformedFile, "\(source): \(data.count) bytes is not a whole number of float32s")
        }
        return data.withUnsafeBytes { raw in
            (0..<(data.count / 4)).map {
                Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self)))
            }
        }
    }

    public static func write(_ samples: [Float], to url: URL) throws {
        try FileIO.write(encode(samples), to: url)
    }

    public static func read(_ url: URL) throws -> [Float] {
        try decode(try FileIO.read(url), source: url.path)
    }
}
