import Foundation

/// `.npy` reading (format versions 1.0, 2.0 and 3.0), C order, little-endian.
public enum Npy {
    public static func load(_ url: URL) throws -> NpyArray {
        try parse(try FileIO.read(url), source: url.path)
    }

    public static func parse(_ data: Data, source: String = "npy") throws -> NpyArray {
        let bytes = [UInt8](data)
        return try parse(bytes[...], source: source)
    }

    static func parse(_ bytes: ArraySlice<UInt8>, source: String) throws -> NpyArray {
        let b = Array(bytes)  // re-index from 0
        let magic: [UInt8] = [0x93, 0x4E, 0x55, 0x4D, 0x50, 0x59]  // \x93NUMPY
        guard b.count >= 10, Array(b[0..<6]) == magic else {
            throw VoxportError(.malformedFile, "\(source): not an .npy array (no \\x93NUMPY magic)")
        }
        let major = b[6]
        let headerLen: Int
        let headerStart: Int
        switch major {
        case 1:
            headerLen = Int(b[8]) | Int(b[9]) << 8
            headerStart = 10
        case 2, 3:
            guard b.count >= 12 else { throw VoxportError(.malformedFile, "\(source): truncated .npy header") }
            headerLen = Int(b[8]) | Int(b[9]) << 8 | Int(b[10]) << 16 | Int(b[11]) << 24
            headerStart = 12
        default:
            throw VoxportError(.malformedFile, "\(source): .npy format version \(major).\(b[7]) (reads 1.0, 2.0, 3.0)")
        }
        guard headerStart + headerLen <= b.count else {
            throw VoxportError(.malformedFile, "\(source): truncated .npy header")
        }
        let headerBytes = b[headerStart..<(headerStart + headerLen)]
        // 1.0/2.0 headers are latin-1, 3.0 UTF-8; both are ASCII for the dtypes read here.
        let text = major == 3 ? String(decoding: headerBytes, as: UTF8.self)
            : String(String.UnicodeScalarView(headerBytes.map { Unicode.Scalar($0) }))
        let (dtype, shape) = try header(text, source: source)
        let count = shape.reduce(1, *)
        let dataStart = headerStart + headerLen
        let need = count * dtype.itemSize
        guard b.count - dataStart >= need else {
            throw VoxportError(
                .malformedFile, "\(source): truncated: \(shape) \(dtype) needs \(need) bytes, found \(b.count - dataStart)")
        }
        let payload = b[dataStart..<(dataStart + need)]
        return NpyArray(shape: shape, storage: decode(payload, dtype: dtype, count: count))
    }

    private static func header(_ text: String, source: String) throws -> (NpyDType, [Int]) {
        guard case .dict(let pairs) = try PyLiteral.parse(text) else {
            throw VoxportError(.malformedFile, "\(source): .npy header is not a dict")
        }
        let d = Dictionary(pairs, uniquingKeysWith: { _, last in last })
        guard case .string(let descr)? = d["descr"] else {
            throw VoxportError(.malformedFile, "\(source): .npy header has no string 'descr' (structured arrays are not supported)")
        }
        guard case .bool(let fortran)? = d["fortran_order"] else {
            throw VoxportError(.malformedFile, "\(source): .npy header has no 'fortran_order'")
        }
        if fortran {
            throw VoxportError(
                .malformedFile, "\(source): fortran_order arrays are not supported (save np.ascontiguousarray(a))")
        }
        guard case .tuple(let dims)? = d["shape"] else {
            throw VoxportError(.malformedFile, "\(source): .npy header has no 'shape' tuple")
        }
        let shape: [Int] = try dims.map {
            guard case .int(let n) = $0, n >= 0 else {
                throw VoxportError(.malformedFile, "\(source): bad shape entry \($0)")
            }
            return n
        }
        return (try NpyDType.parse(descr, source: source), shape)
    }

    private static func decode(_ payload: ArraySlice<UInt8>, dtype: NpyDType, count: Int) -> NpyStorage {
        payload.withUnsafeBytes { raw in
            switch dtype {
            case .float32: return .float32(load(raw, count, UInt32.self).map { Float(bitPattern: $0) })
            case .float64: return .float64(load(raw, count, UInt64.self).map { Double(bitPattern: $0) })
            case .int32: return .int32(load(raw, count, Int32.self))
            case .int64: return .int64(load(raw, count, Int64.self))
            case .bool: return .bool(raw.map { $0 != 0 })
            case .unicode(let width):
                let units = load(raw, count * width, UInt32.self)
                var out: [String] = []
                out.reserveCapacity(count)
                for i in 0..<count {
                    var cell = units[(i * width)..<((i + 1) * width)]
                    while let last = cell.last, last == 0 { cell = cell.dropLast() }  // numpy strips trailing NULs
                    var s = String.UnicodeScalarView()
                    for u in cell { s.append(Unicode.Scalar(u) ?? "\u{FFFD}") }
                    out.append(String(s))
                }
                return .string(out, width: width)
            }
        }
    }

    /// `count` little-endian fixed-width integers from unaligned bytes.
    private static func load<T: FixedWidthInteger>(_ raw: UnsafeRawBufferPointer, _ count: Int, _: T.Type) -> [T] {
        (0..<count).map { T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * MemoryLayout<T>.size, as: T.self)) }
    }
}
