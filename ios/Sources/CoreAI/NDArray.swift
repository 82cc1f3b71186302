import Synchronization

/// A multi-dimensional array: a copy-on-write value over storage it owns.
///
/// As on a device, an array is a shape, per-dimension strides (in elements, not bytes) and a
/// scalar type over a block of memory; the strides need not be contiguous. `init(descriptor:)`
/// takes the descriptor's preferred strides, which the mirror pads on purpose
/// (`NDArrayDescriptor.preferredStrides`), so code that treats such an array as a flat buffer
/// reads and writes the wrong elements here, as it would on a GPU or the Neural Engine. New
/// storage is not zeroed: it holds a NaN / -1 byte pattern, so a state that was never cleared
/// shows up in the numbers.
public struct NDArray: Sendable {
    var storage: NDStorage
    public let shape: [Int]
    /// Elements between neighbours along each dimension.
    public let strides: [Int]
    public let scalarType: ScalarType

    /// A contiguous (row-major) array, its contents unspecified.
    public init(shape: [Int], scalarType: ScalarType) {
        self.init(shape: shape, scalarType: scalarType, strides: Layout.rowMajorStrides(shape))
    }

    /// An array with the given strides (one per dimension, in elements), its contents unspecified.
    public init(shape: [Int], scalarType: ScalarType, strides: [Int]) {
        precondition(shape.count == strides.count, "CoreAI: \(shape.count) dimensions but \(strides.count) strides")
        precondition(shape.allSatisfy { $0 >= 0 }, "CoreAI: shape \(shape) has a negative dimension")
        precondition(strides.allSatisfy { $0 >= 0 }, "CoreAI: negative strides are not supported")
        self.shape = shape
        self.strides = strides
        self.scalarType = scalarType
        storage = NDStorage(byteCount: Layout(shape: shape, strides: strides).span * scalarType.byteSize)
    }

    /// An array of `scalars` in row-major order; the scalar type follows the element type.
    public init<Scalar: BitwiseCopyable>(scalars: some Sequence<Scalar>, shape: [Int]) {
        guard let type = ScalarType.of(Scalar.self) else {
            preconditionFailure("CoreAI: \(Scalar.self) is not a scalar type of NDArray")
        }
        self.init(shape: shape, scalarType: type)
        var view = mutableView(as: Scalar.self)
        view.copyElements(from: scalars)
    }

    /// An array laid out as `descriptor` prefers (strides possibly padded: never assume a flat
    /// buffer). Traps on a descriptor with a dynamic dimension: resolve it first
    /// (`NDArrayDescriptor.resolvingDynamicDimensions`).
    public init(descriptor: consuming NDArrayDescriptor) {
        precondition(
            !descriptor.hasDynamicShape,
            "CoreAI: NDArray(descriptor:) of a descriptor with a dynamic dimension (shape \(descriptor.shape)): "
                + "call resolvingDynamicDimensions(_:) first")
        self.init(shape: descriptor.shape, scalarType: descriptor.scalarType, strides: descriptor.preferredStrides)
    }

    var layout: Layout { Layout(shape: shape, strides: strides) }

    /// A read-only typed view; `T` must be the Swift type of `scalarType` (a mismatch traps).
    @_lifetime(borrow self)
    public func view<T: BitwiseCopyable>(as type: T.Type = T.self) -> View<T> {
        checkElementType(T.self, scalarType, "view")
        return View(storage: storage, shape: shape, strides: strides)
    }

    /// A mutable typed view; `T` must be the Swift type of `scalarType` (a mismatch traps). The
    /// storage is made unique first (copy-on-write): writes through the view change this array only.
    @_lifetime(&self)
    public mutating func mutableView<T: BitwiseCopyable>(as type: T.Type = T.self) -> MutableView<T> {
        checkElementType(T.self, scalarType, "mutableView")
        makeUnique()
        return MutableView(storage: storage, shape: shape, strides: strides)
    }

    /// A type-erased read-only view.
    @_lifetime(borrow self)
    public func rawView() -> RawView {
        RawView(storage: storage, scalarType: scalarType, shape: shape, strides: strides)
    }

    /// A type-erased mutable view (what a state or an output view is given as).
    @_lifetime(&self)
    public mutating func mutableRawView() -> MutableRawView {
        makeUnique()
        return MutableRawView(storage: storage, scalarType: scalarType, shape: shape, strides: strides)
    }

    /// Copy-on-write: the storage is copied when shared with another array before a write.
    mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) {
            storage = storage.copy()
            NDArray.storageCopies.add(1, ordering: .relaxed)
        }
    }

    /// Storage copies made by copy-on-write in this process. A host that keeps a KV cache in a
    /// shared value copies the whole cache on every call; tests read this to prove one does not.
    static let storageCopies = Atomic<Int>(0)
}

/// The memory behind one or more arrays that share it until one writes (copy-on-write).
final class NDStorage: @unchecked Sendable {
    // @unchecked: `bytes` is written only through a mutable view or `makeUnique`'s copy, and a
    // mutable view exists only while its NDArray's storage is uniquely referenced and exclusively
    // accessed (the view's lifetime depends on `&array`); readers share it unchanged.
    let bytes: UnsafeMutableRawPointer
    let byteCount: Int

    /// Never-zeroed memory, as on a device: 0xFF bytes (NaN floats, -1 integers).
    init(byteCount: Int) {
        self.byteCount = byteCount
        bytes = .allocate(byteCount: max(byteCount, 1), alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0xFF, count: max(byteCount, 1))
    }

    func copy() -> NDStorage {
        let other = NDStorage(byteCount: byteCount)
        other.bytes.copyMemory(from: bytes, byteCount: byteCount)
        return other
    }

    deinit { bytes.deallocate() }
}

/// Shape and strides, and the walks over them that every copy in the mirror uses.
struct Layout: Sendable, Equatable {
    let shape: [Int]
    let strides: [Int]

    var count: Int { shape.reduce(1, *) }

    /// Elements from the first to one past the last addressable one.
    var span: Int {
        guard count > 0 else { return 0 }
        return 1 + zip(shape, strides).reduce(0) { $0 + ($1.0 - 1) * $1.1 }
    }

    var isContiguous: Bool { strides == Layout.rowMajorStrides(shape) || count <= 1 }

    static func rowMajorStrides(_ shape: [Int]) -> [Int] {
        var strides = [Int](repeating: 1, count: shape.count)
        var step = 1
        for d in shape.indices.reversed() {
            strides[d] = step
            step *= max(shape[d], 1)
        }
        return strides
    }

    /// The element offset of every element, in row-major (logical) order, a row at a time:
    /// `body(offset of the row's first element, elements in the row, the row's stride)`.
    func forEachRow(_ body: (Int, Int, Int) -> Void) {
        guard count > 0 else { return }
        guard let last = shape.indices.last else { return body(0, 1, 1) }
        let rows = count / shape[last]
        var index = [Int](repeating: 0, count: shape.count)
        var offset = 0
        for _ in 0..<rows {
            body(offset, shape[last], strides[last])
            var d = last - 1
            while d >= 0 {
                index[d] += 1
                offset += strides[d]
                if index[d] < shape[d] { break }
                offset -= strides[d] * shape[d]
                index[d] = 0
                d -= 1
            }
        }
    }

    /// Copy the logical elements from `source` laid out as `self` into contiguous `target`.
    func gather(from source: UnsafeRawPointer, into target: UnsafeMutableRawPointer, elementSize: Int) {
        var out = 0
        forEachRow { offset, n, stride in
            if stride == 1 {
                (target + out).copyMemory(from: source + offset * elementSize, byteCount: n * elementSize)
                out += n * elementSize
            } else {
                for i in 0..<n {
                    (target + out).copyMemory(from: source + (offset + i * stride) * elementSize, byteCount: elementSize)
                    out += elementSize
                }
            }
        }
    }

    /// Copy contiguous `source` into `target` laid out as `self`.
    func scatter(from source: UnsafeRawPointer, into target: UnsafeMutableRawPointer, elementSize: Int) {
        var read = 0
        forEachRow { offset, n, stride in
            if stride == 1 {
                (target + offset * elementSize).copyMemory(from: source + read, byteCount: n * elementSize)
                read += n * elementSize
            } else {
                for i in 0..<n {
                    (target + (offset + i * stride) * elementSize).copyMemory(from: source + read, byteCount: elementSize)
                    read += elementSize
                }
            }
        }
    }
}
