import Foundation
#if canImport(CryptoKit)
import CryptoKit
#endif

/// Streaming SHA-256: CryptoKit where it exists (Apple platforms), the pure-Swift one elsewhere.
/// Both give the digests Python's `hashlib.sha256` gives (tested against them).
// Not Sendable: CryptoKit.SHA256 is not declared so on every SDK, and a hasher is a local accumulator.
public struct SHA256Hasher {
    #if canImport(CryptoKit)
    private var impl = CryptoKit.SHA256()
    #else
    private var impl = PureSHA256()
    #endif

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        #if canImport(CryptoKit)
        impl.update(bufferPointer: bytes)
        #else
        impl.update(bytes)
        #endif
    }

    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest of everything fed so far (the hasher itself is not consumed).
    public func finalize() -> [UInt8] {
        #if canImport(CryptoKit)
        return Array(impl.finalize())
        #else
        return impl.finalize()
        #endif
    }

    public func hexDigest() -> String { Hex.string(finalize()) }

    public static func digest(_ data: Data) -> [UInt8] {
        var h = SHA256Hasher()
        h.update(data)
        return h.finalize()
    }

    public static func hexDigest(_ data: Data) -> String { Hex.string(digest(data)) }
}

/// Lower-case hex, as Python's `hexdigest()` writes it.
public enum Hex {
    public static func string(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes of a hex string (either case); nil if it is not hex.
    public static func bytes(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 97...102: return c - 87
        case 65...70: return c - 55
        default: return nil
        }
    }
}
