// The views over an NDArray's storage: typed and raw, read-only and mutable. Each is
// non-escapable (it cannot outlive the array it was taken from); the mutable ones are also
// non-copyable (one writer at a time). The pointer closures take three arguments — the first
// element, the shape, the strides — and a caller must index with the strides: an array from
// `NDArray(descriptor:)` is padded here.

extension NDArray {
    /// A read-only typed view of an array's elements.
    public struct View<Element: BitwiseCopyable>: ~Escapable {
        let storage: NDStorage
        let layout: Layout

        @_lifetime(immortal)
        init(storage: NDStorage, shape: [Int], strides: [Int]) {
            self.storage = storage
            layout = Layout(shape: shape, strides: strides)
        }

        /// Whether the elements are row-major with no padding.
        public var isContiguous: Bool { layout.isContiguous }
        public var rank: Int { layout.shape.count }

        public var shape: Span<Int> {
            @_lifetime(borrow self) get { layout.shape.span }
        }

        public var strides: Span<Int> {
            @_lifetime(borrow self) get { layout.strides.span }
        }

        /// `body(pointer to the first element, shape, strides)`: read element `i` (a multi-index)
        /// at `pointer[Σ i[d] * strides[d]]`, never at a flat offset.
        public func withUnsafePointer<R, E: Error>(
            _ body: (UnsafePointer<Element>, Span<Int>, Span<Int>) throws(E) -> R
        ) throws(E) -> R {
            try body(UnsafePointer(storage.bytes.assumingMemoryBound(to: Element.self)), layout.shape.span, layout.strides.span)
        }
    }

    /// A mutable typed view of an array's elements.
    public struct MutableView<Element: BitwiseCopyable>: ~Copyable, ~Escapable {
        let storage: NDStorage
        let layout: Layout

        @_lifetime(immortal)
        init(storage: NDStorage, shape: [Int], strides: [Int]) {
            self.storage = storage
            layout = Layout(shape: shape, strides: strides)
        }

        public var isContiguous: Bool { layout.isContiguous }
        public var rank: Int { layout.shape.count }

        public var shape: Span<Int> {
            @_lifetime(borrow self) get { layout.shape.span }
        }

        public var strides: Span<Int> {
            @_lifetime(borrow self) get { layout.strides.span }
        }

        /// `body(pointer to the first element, shape, strides)`: write element `i` (a
        /// multi-index) at `pointer[Σ i[d] * strides[d]]`, never at a flat offset.
        public func withUnsafeMutablePointer<R, E: Error>(
            _ body: (UnsafeMutablePointer<Element>, Span<Int>, Span<Int>) throws(E) -> R
        ) throws(E) -> R {
            try body(storage.bytes.assumingMemoryBound(to: Element.self), layout.shape.span, layout.strides.span)
        }

        /// Write `collection`'s elements in row-major order, honouring the strides; at most as
        /// many as the view holds (more traps).
        public mutating func copyElements(fromContentsOf collection: some Collection<Element>) {
            precondition(
                collection.count <= layout.count,
                "CoreAI: copyElements of \(collection.count) elements into a view of \(layout.count)")
            copyElements(from: collection)
        }

        /// Write `sequence`'s elements in row-major order, honouring the strides.
        public mutating func copyElements(from sequence: some Sequence<Element>) {
            let base = storage.bytes.assumingMemoryBound(to: Element.self)
            var iterator = sequence.makeIterator()
            var written = 0
            var done = false
            layout.forEachRow { offset, n, stride in
                guard !done else { return }
                for i in 0..<n {
                    guard let x = iterator.next() else {
                        done = true
                        return
                    }
                    base[offset + i * stride] = x
                    written += 1
                }
            }
            precondition(done || iterator.next() == nil, "CoreAI: copyElements of more elements than the view holds (\(written))")
        }

        /// A read-only view of the same elements.
        public var view: View<Element> {
            @_lifetime(borrow self) get { View(storage: storage, shape: layout.shape, strides: layout.strides) }
        }
    }

    /// A read-only view of an array's bytes, typed by `scalarType`.
    public struct RawView: ~Escapable {
        let storage: NDStorage
        public let scalarType: ScalarType
        let layout: Layout

        @_lifetime(immortal)
        init(storage: NDStorage, scalarType: ScalarType, shape: [Int], strides: [Int]) {
            self.storage = storage
            self.scalarType = scalarType
            layout = Layout(shape: shape, strides: strides)
        }

        public var shape: Span<Int> {
            @_lifetime(borrow self) get { layout.shape.span }
        }

        public var strides: Span<Int> {
            @_lifetime(borrow self) get { layout.strides.span }
        }

        /// `body(pointer to the first element's bytes, shape, strides)`; strides are in elements.
        public func withUnsafeBytes<R, E: Error>(
            _ body: (UnsafeRawPointer, Span<Int>, Span<Int>) throws(E) -> R
        ) throws(E) -> R {
            try body(UnsafeRawPointer(storage.bytes), layout.shape.span, layout.strides.span)
        }

        /// A typed view; `T` must be the Swift type of `scalarType` (a mismatch traps).
        @_lifetime(copy self)
        public consuming func view<T: BitwiseCopyable>(as type: T.Type = T.self) -> View<T> {
            checkElementType(T.self, scalarType, "RawView.view")
            return View(storage: storage, shape: layout.shape, strides: layout.strides)
        }
    }

    /// A mutable view of an array's bytes, typed by `scalarType`: what a state or a
    /// pre-allocated output is handed to `InferenceFunction.run` as.
    public struct MutableRawView: ~Copyable, ~Escapable {
        let storage: NDStorage
        public let scalarType: ScalarType
        let layout: Layout

        @_lifetime(immortal)
        init(storage: NDStorage, scalarType: ScalarType, shape: [Int], strides: [Int]) {
            self.storage = storage
            self.scalarType = scalarType
            layout = Layout(shape: shape, strides: strides)
        }

        public var shape: Span<Int> {
            @_lifetime(borrow self) get { layout.shape.span }
        }

        public var strides: Span<Int> {
            @_lifetime(borrow self) get { layout.strides.span }
        }

        /// A typed mutable view; `T` must be the Swift type of `scalarType` (a mismatch traps).
        @_lifetime(copy self)
        public consuming func view<T: BitwiseCopyable>(as type: T.Type = T.self) -> MutableView<T> {
            checkElementType(T.self, scalarType, "MutableRawView.view")
            return MutableView(storage: storage, shape: layout.shape, strides: layout.strides)
        }

        /// A read-only raw view of the same bytes.
        public var rawView: RawView {
            @_lifetime(borrow self) get {
                RawView(storage: storage, scalarType: scalarType, shape: layout.shape, strides: layout.strides)
            }
        }
    }
}
