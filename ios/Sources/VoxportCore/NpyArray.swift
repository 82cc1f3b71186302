/// One array read from an `.npy` (or an `.npz` member): shape plus typed, C-order storage.
public struct NpyArray: Equatable, Sendable {
    public let shape: [Int]
    public let storage: NpyStorage

    public init(shape: [Int], storage: NpyStorage) {
        self.shape = shape
        self.storage = storage
    }

    /// Number of elements (1 for a 0-d array, 0 when any dimension is 0).
    public var count: Int { shape.reduce(1, *) }

    public var dtype: NpyDType { storage.dtype }

    public func float32() throws -> [Float] {
        if case .float32(let v) = storage { return v }
        throw mismatch("float32")
    }

    public func float64() throws -> [Double] {
        if case .float64(let v) = storage { return v }
        throw mismatch("float64")
    }

    public func int32() throws -> [Int32] {
        if case .int32(let v) = storage { return v }
        throw mismatch("int32")
    }

    public func int64() throws -> [Int64] {
        if case .int64(let v) = storage { return v }
        throw mismatch("int64")
    }

    public func bool() throws -> [Bool] {
        if case .bool(let v) = storage { return v }
        throw mismatch("bool")
    }

    public func strings() throws -> [String] {
        if case .string(let v, _) = storage { return v }
        throw mismatch("str")
    }

    private func mismatch(_ want: String) -> VoxportError {
        VoxportError(.user, "array is \(dtype), not \(want) (shape \(shape))")
    }
}

/// The element types host arrays use (`<f4 <f8 <i4 <i8 |b1 <U`).
public enum NpyStorage: Equatable, Sendable {
    case float32([Float])
    case float64([Double])
    case int32([Int32])
    case int64([Int64])
    case bool([Bool])
    /// Fixed-width unicode (`<U{width}`), trailing NULs stripped as numpy does.
    case string([String], width: Int)

    public var dtype: NpyDType {
        switch self {
        case .float32: return .float32
        case .float64: return .float64
        case .int32: return .int32
        case .int64: return .int64
        case .bool: return .bool
        case .string(_, let width): return .unicode(width: width)
        }
    }
}

public enum NpyDType: Equatable, Sendable, CustomStringConvertible {
    case float32, float64, int32, int64, bool
    case unicode(width: Int)

    /// numpy's `dtype.str` for it.
    public var descr: String {
        switch self {
        case .float32: return "<f4"
        case .float64: return "<f8"
        case .int32: return "<i4"
        case .int64: return "<i8"
        case .bool: return "|b1"
        case .unicode(let w): return "<U\(w)"
        }
    }

    /// Bytes per element.
    public var itemSize: Int {
        switch self {
        case .float32, .int32: return 4
        case .float64, .int64: return 8
        case .bool: return 1
        case .unicode(let w): return 4 * w
        }
    }

    public var description: String { descr }

    /// Parse a header `descr`; anything else is refused with the supported list.
    static func parse(_ descr: String, source: String) throws -> NpyDType {
        switch descr {
        case "<f4": return .float32
        case "<f8": return .float64
        case "<i4": return .int32
        case "<i8": return .int64
        case "|b1": return .bool
        default:
            if descr.hasPrefix("<U"), let w = Int(descr.dropFirst(2)), w >= 0 { return .unicode(width: w) }
            let why = descr.hasPrefix(">") ? "big-endian arrays are not supported (re-save it little-endian)"
                : "supported: <f4 <f8 <i4 <i8 |b1 <U"
            throw VoxportError(.malformedFile, "\(source): dtype '\(descr)': \(why)")
        }
    }
}
