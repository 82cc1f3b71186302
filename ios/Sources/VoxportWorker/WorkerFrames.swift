import Foundation
import VoxportCore

/// A tensor crossing the host/graph boundary: shape plus typed, C-order storage (the same
/// type the host reads from `.npz` files).
public typealias Tensor = NpyArray

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `voxport-worker/1` frames (docs/worker-protocol.md; Python: `conversion.core.runtime.worker_protocol`):
/// a u32 little-endian header length, the UTF-8 JSON header, then the raw little-endian bytes
/// of each array `header["arrays"]` lists (`name`, `dtype`, `shape`, `nbytes`), in order.
public enum WorkerFrames {
    public static let protocolName = "voxport-worker/1"
    /// Headers longer than this are refused as a broken stream (Python's `MAX_HEADER_BYTES`).
    public static let maxHeaderBytes = 16 << 20
    /// Frames up to this many array bytes are sent with one write (copied once).
    static let coalesceBytes = 8 << 20

    /// The wire form of a tensor (its dtype's numpy name and raw bytes). Strings cannot be sent.
    public static func encode(_ name: String, _ t: Tensor) throws -> WireArray {
        func wire(_ dtype: String, _ bytes: Data) -> WireArray { WireArray(name: name, dtype: dtype, shape: t.shape, bytes: bytes) }
        switch t.storage {
        case .float32(let v): return wire("float32", v.withUnsafeBytes { Data($0) })
        case .float64(let v): return wire("float64", v.withUnsafeBytes { Data($0) })
        case .int32(let v): return wire("int32", v.withUnsafeBytes { Data($0) })
        case .int64(let v): return wire("int64", v.withUnsafeBytes { Data($0) })
        case .bool(let v): return wire("bool", Data(v.map { $0 ? 1 : 0 }))
        case .string:
            throw RunnerError(.inputSpec, "input '\(name)': string arrays cannot be sent to a graph", type: "InputSpecError")
        }
    }

    /// Bytes per element of a wire dtype (numpy's names); nil for a dtype the protocol lacks.
    public static func itemSize(_ dtype: String) -> Int? {
        switch dtype {
        case "float32", "int32": return 4
        case "float64", "int64": return 8
        case "float16", "int16": return 2
        case "bool", "int8", "uint8": return 1
        default: return nil
        }
    }

    /// A tensor from wire bytes; float16 is widened to float32 (NpyArray has no half type).
    static func decode(dtype: String, shape: [Int], bytes: UnsafeRawBufferPointer) throws -> Tensor {
        let n = shape.reduce(1, *)
        func load<T>(_: T.Type) -> [T] {
            [T](unsafeUninitializedCapacity: n) { buf, count in
                if n > 0 { memcpy(buf.baseAddress!, bytes.baseAddress!, n * MemoryLayout<T>.stride) }
                count = n
            }
        }
        switch dtype {
        case "float32": return Tensor(shape: shape, storage: .float32(load(Float.self)))
        case "float64": return Tensor(shape: shape, storage: .float64(load(Double.self)))
        case "int32": return Tensor(shape: shape, storage: .int32(load(Int32.self)))
        case "int64": return Tensor(shape: shape, storage: .int64(load(Int64.self)))
        case "bool": return Tensor(shape: shape, storage: .bool(bytes.prefix(n).map { $0 != 0 }))
        case "float16": return Tensor(shape: shape, storage: .float32(load(UInt16.self).map(halfToFloat)))
        case "int8", "uint8", "int16":
            throw RunnerError(.runtime, "a \(dtype) array has no Tensor storage (a host works in float32, int32 and int64)")
        default: throw RunnerError(.protocolError, "unknown dtype '\(dtype)' in a frame")
        }
    }

    /// IEEE 754 binary16 bits to Float, exactly (no Float16 type: it is missing on macOS x86_64).
    public static func halfToFloat(_ h: UInt16) -> Float {
        let sign = UInt32(h >> 15) << 31
        let exp = UInt32((h >> 10) & 0x1f)
        let frac = UInt32(h & 0x3ff)
        if exp == 0 {
            let magnitude = Float(frac) * Float(sign: .plus, exponent: -24, significand: 1)
            return sign == 0 ? magnitude : -magnitude
        }
        if exp == 0x1f { return Float(bitPattern: sign | 0x7f80_0000 | (frac << 13)) }
        return Float(bitPattern: sign | ((exp + 112) << 23) | (frac << 13))
    }
}

/// One array as it crosses the pipe: numpy's dtype name, the shape and `product(shape) *
/// itemSize(dtype)` bytes in C order, little-endian, no padding.
public struct WireArray: Sendable {
    public var name: String
    public var dtype: String
    public var shape: [Int]
    public var bytes: Data

    public init(name: String, dtype: String, shape: [Int], bytes: Data) {
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.bytes = bytes
    }

    /// As a host tensor (float16 widened to float32).
    public func tensor() throws -> Tensor {
        try bytes.withUnsafeBytes { try WorkerFrames.decode(dtype: dtype, shape: shape, bytes: $0) }
    }
}

/// One frame as read: the header (a JSON object) and its arrays by name, as sent.
public struct WorkerFrame: Sendable {
    public var header: [String: JSONValue]
    public var arrays: [String: WireArray]

    public var ok: Bool { if case .bool(true)? = header["ok"] { return true } else { return false } }

    /// The arrays as host tensors.
    public func tensors() throws -> [String: Tensor] { try arrays.mapValues { try $0.tensor() } }
}

/// Frames over two pipe file descriptors (read from the worker, write to it), every wait
/// bounded by a deadline through `poll`, so a hung worker is a `.timeout`, not a hang.
final class FramePipe: Sendable {
    let readFD: Int32
    let writeFD: Int32

    init(readFD: Int32, writeFD: Int32) {
        self.readFD = readFD
        self.writeFD = writeFD
        // Non-blocking writes: a worker that stops reading cannot hold a write past the deadline.
        _ = fcntl(writeFD, F_SETFL, fcntl(writeFD, F_GETFL) | O_NONBLOCK)
    }

    struct EndOfStream: Error {}
    struct Timeout: Error {}

    private func wait(_ fd: Int32, events: Int16, deadline: Double?) throws {
        while true {
            var ms: Int32 = -1
            if let deadline {
                let left = deadline - monotonicSeconds()
                if left <= 0 { throw Timeout() }
                ms = Int32(min(left * 1000 + 1, Double(Int32.max)))
            }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, ms)
            if r > 0 { return }  // readable, writable, or hung up (the read/write says which)
            if r == 0 { throw Timeout() }
            if errno != EINTR { throw RunnerError(.protocolError, "poll failed: errno \(errno)") }
        }
    }

    /// Exactly `count` bytes into `buffer`; `EndOfStream` if the worker closed first (after `got`
    /// bytes: 0 means between frames).
    private func readExactly(_ buffer: UnsafeMutableRawBufferPointer, deadline: Double?) throws -> Int {
        var got = 0
        while got < buffer.count {
            try wait(readFD, events: Int16(POLLIN), deadline: deadline)
            let k = read(readFD, buffer.baseAddress! + got, buffer.count - got)
            if k == 0 { return got }
            if k < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return got
            }
            got += k
        }
        return got
    }

    private func readBytes(_ count: Int, deadline: Double?, what: String) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let got = try out.withUnsafeMutableBytes { try readExactly($0, deadline: deadline) }
        if got < count { throw got == 0 && what == "length" ? EndOfStream() : truncated(what) }
        return out
    }

    private func truncated(_ what: String) -> Error {
        RunnerError(.protocolError, "the worker's stream ended inside a frame's \(what)")
    }

    func receive(deadline: Double?) throws -> WorkerFrame {
        let len = try readBytes(4, deadline: deadline, what: "length")
        let n = Int(len[0]) | Int(len[1]) << 8 | Int(len[2]) << 16 | Int(len[3]) << 24
        guard n <= WorkerFrames.maxHeaderBytes else {
            throw RunnerError(.protocolError, "header length \(n) is over \(WorkerFrames.maxHeaderBytes) bytes: not a frame")
        }
        let text = try readBytes(n, deadline: deadline, what: "header")
        guard case .object(let header)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text)) else {
            throw RunnerError(.protocolError, "a frame header is not a JSON object")
        }
        var arrays: [String: WireArray] = [:]
        for entry in header["arrays"]?.arrayValue ?? [] {
            guard let name = entry["name"]?.stringValue, let dtype = entry["dtype"]?.stringValue,
                let shape = entry["shape"]?.arrayValue?.compactMap(\.intValue), let nbytes = entry["nbytes"]?.intValue,
                let size = WorkerFrames.itemSize(dtype), shape.allSatisfy({ $0 >= 0 }),
                shape.reduce(1, *) * size == nbytes
            else { throw RunnerError(.protocolError, "bad array entry \(entry) in a frame header") }
            var raw = Data(count: nbytes)
            let got = try raw.withUnsafeMutableBytes { try readExactly($0, deadline: deadline) }
            if got < nbytes { throw truncated("array '\(name)'") }
            arrays[name] = WireArray(name: name, dtype: dtype, shape: shape, bytes: raw)
        }
        return WorkerFrame(header: header, arrays: arrays)
    }

    /// Write one frame; arrays in the given order. A closed worker throws `EndOfStream`.
    func send(_ header: [String: JSONValue], arrays: [WireArray] = [], deadline: Double?) throws {
        var head = header
        let payload = arrays.map(\.bytes)
        if !arrays.isEmpty {
            head["arrays"] = .array(
                arrays.map { a in
                    .object([
                        "name": .string(a.name), "dtype": .string(a.dtype),
                        "shape": .array(a.shape.map { .int($0) }), "nbytes": .int(a.bytes.count),
                    ])
                })
        }
        let text = try JSONEncoder().encode(JSONValue.object(head))
        let n = UInt32(text.count)
        var frame = Data([UInt8(n & 0xff), UInt8(n >> 8 & 0xff), UInt8(n >> 16 & 0xff), UInt8(n >> 24)])
        frame.append(text)
        // One write for a frame of modest size: the worker wakes once, not once per array
        // (that costs a scheduling round trip each on a busy machine).
        if payload.reduce(0, { $0 + $1.count }) <= WorkerFrames.coalesceBytes {
            for p in payload { frame.append(p) }
            try writeAll(frame, deadline: deadline)
        } else {
            try writeAll(frame, deadline: deadline)
            for p in payload { try writeAll(p, deadline: deadline) }
        }
    }

    private func writeAll(_ data: Data, deadline: Double?) throws {
        try data.withUnsafeBytes { (buf: UnsafeRawBufferPointer) in
            var done = 0
            while done < buf.count {
                try wait(writeFD, events: Int16(POLLOUT), deadline: deadline)
                let k = write(writeFD, buf.baseAddress! + done, buf.count - done)
                if k < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    throw EndOfStream()  // EPIPE: the worker is gone
                }
                done += k
            }
        }
    }
}

package func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}
