// The mirror's arrays on their own (no runtime): the padded layout `init(descriptor:)` gives,
// copies through strides, copy-on-write, element-type checks and dynamic dimensions. What runs
// on the runtime is in VoxportRunnerTests (CoreAIRunnerTests) and the end-to-end parity tests.
import XCTest

@testable import CoreAI

final class NDArrayTests: XCTestCase {
    /// A [3, 5] float32 descriptor, as a function would describe an input.
    let matrix = NDArrayDescriptor(shape: [3, 5], scalarType: .float32)

    func testDescriptorArraysArePaddedSoAFlatCopyIsWrong() {
        XCTAssertEqual(matrix.preferredStrides, [32, 1], "rows of 5 floats padded to 16, plus one 16-float block")
        XCTAssertEqual(matrix.minimumByteCount, (2 * 32 + 5) * 4)
        var a = NDArray(descriptor: matrix)
        XCTAssertFalse(a.view(as: Float.self).isContiguous)
        var w = a.mutableView(as: Float.self)
        w.copyElements(fromContentsOf: (0..<15).map(Float.init))
        // Through the strides every element is where it belongs...
        let strided: [Float] = a.view(as: Float.self).withUnsafePointer { p, shape, strides in
            (0..<shape[0]).flatMap { i in (0..<shape[1]).map { j in p[i * strides[0] + j * strides[1]] } }
        }
        XCTAssertEqual(strided, (0..<15).map(Float.init))
        // ...read as a flat buffer, the second row is padding (never-zeroed memory: NaN).
        let flat = a.view(as: Float.self).withUnsafePointer { p, _, _ in Array(UnsafeBufferPointer(start: p, count: 15)) }
        XCTAssertEqual(Array(flat[0..<5]), [0, 1, 2, 3, 4])
        XCTAssertTrue(flat[5].isNaN, "the padding after the first row, not element 5")
    }

    func testEveryMultiRowShapeIsPaddedAlignedOrNot() {
        // A row already 64-byte aligned still gets padding: a flat copy fails whatever the shape.
        let aligned = NDArrayDescriptor(shape: [2, 16], scalarType: .float32)
        XCTAssertEqual(aligned.preferredStrides, [32, 1])
        let halves = NDArrayDescriptor(shape: [1, 4, 3, 7], scalarType: .float16)
        XCTAssertEqual(halves.preferredStrides, [4 * 3 * 64, 3 * 64, 64, 1])
        // One dimension has no rows to pad.
        XCTAssertEqual(NDArrayDescriptor(shape: [9], scalarType: .int32).preferredStrides, [1])
    }

    func testContiguousInitsAndScalars() {
        let a = NDArray(scalars: [Int32(1), 2, 3, 4, 5, 6], shape: [2, 3])
        XCTAssertEqual(a.scalarType, .int32)
        XCTAssertEqual(a.strides, [3, 1])
        XCTAssertTrue(a.view(as: Int32.self).isContiguous)
        let read = a.view(as: Int32.self).withUnsafePointer { p, _, _ in Array(UnsafeBufferPointer(start: p, count: 6)) }
        XCTAssertEqual(read, [1, 2, 3, 4, 5, 6])
        let h = NDArray(scalars: [Float16(0.5), 2], shape: [2])
        XCTAssertEqual(h.scalarType, .float16)
    }

    func testCopyOnWriteCopiesSharedStorageOnlyAndCountsIt() {
        var a = NDArray(scalars: [Float](repeating: 1, count: 4), shape: [4])
        let before = NDArray.storageCopies.load(ordering: .relaxed)
        var v = a.mutableView(as: Float.self)
        v.copyElements(fromContentsOf: [Float](repeating: 2, count: 4))
        XCTAssertEqual(NDArray.storageCopies.load(ordering: .relaxed), before, "a uniquely held array is written in place")
        let b = a  // shares the storage
        var w = a.mutableView(as: Float.self)
        w.copyElements(fromContentsOf: [Float](repeating: 3, count: 4))
        XCTAssertEqual(NDArray.storageCopies.load(ordering: .relaxed), before + 1, "the shared storage was copied once")
        let first = { (x: NDArray) in x.view(as: Float.self).withUnsafePointer { p, _, _ in p[0] } }
        XCTAssertEqual(first(a), 3)
        XCTAssertEqual(first(b), 2, "the copy kept its value")
    }

    func testElementTypesMustMatchTheScalarType() {
        // What `view(as:)` / `mutableView(as:)` check before they trap.
        XCTAssertTrue(NDArray.ScalarType.float32.accepts(Float.self))
        XCTAssertFalse(NDArray.ScalarType.float16.accepts(Float.self), "Float over float16: the classic fp16 bug")
        XCTAssertFalse(NDArray.ScalarType.int32.accepts(Float.self))
        XCTAssertFalse(NDArray.ScalarType.float32.accepts(Int32.self))
        XCTAssertTrue(NDArray.ScalarType.float16.accepts(Float16.self))
        XCTAssertTrue(NDArray.ScalarType.bfloat16.accepts(Float16.self), "Apple's own state code copies bf16 as Float16")
        XCTAssertTrue(NDArray.ScalarType.int32.accepts(Int32.self))
    }

    func testDynamicDimensionsResolve() {
        let d = NDArrayDescriptor(shape: [1, -1, 8], scalarType: .float32)
        XCTAssertTrue(d.hasDynamicShape)
        let r = d.resolvingDynamicDimensions([1, 12, 8])
        XCTAssertFalse(r.hasDynamicShape)
        XCTAssertEqual(r.shape, [1, 12, 8])
        XCTAssertTrue(d.admits([1, 99, 8]))
        XCTAssertFalse(d.admits([2, 99, 8]))
    }

    func testStridedGatherAndScatterRoundTrip() {
        let layout = Layout(shape: [2, 3, 2], strides: [20, 6, 2])
        var storage = [Float](repeating: -1, count: layout.span)
        let values = (0..<12).map(Float.init)
        values.withUnsafeBytes { src in
            storage.withUnsafeMutableBytes { layout.scatter(from: src.baseAddress!, into: $0.baseAddress!, elementSize: 4) }
        }
        XCTAssertEqual(storage[20 + 6 + 2], values[6 + 2 + 1], "element [1, 1, 1]")
        var back = [Float](repeating: 0, count: 12)
        storage.withUnsafeBytes { src in
            back.withUnsafeMutableBytes { layout.gather(from: src.baseAddress!, into: $0.baseAddress!, elementSize: 4) }
        }
        XCTAssertEqual(back, values)
    }
}
