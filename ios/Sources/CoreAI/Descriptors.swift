// What a function takes and gives, as the runtime describes it: NDArrayDescriptor (shape with
// dynamic dimensions, scalar type, preferred layout), InferenceValue and its descriptor, and the
// function descriptor. The mirror gets them from the asset itself (`voxport serve --assets`
// reads the runtime's own function descriptors), never from a voxport manifest.

/// The shape, scalar type and preferred layout of an array a function takes or gives.
public struct NDArrayDescriptor: Sendable, Equatable {
    /// One entry per dimension; a negative entry is a dynamic dimension.
    public let shape: [Int]
    public let scalarType: NDArray.ScalarType

    init(shape: [Int], scalarType: NDArray.ScalarType) {
        self.shape = shape
        self.scalarType = scalarType
    }

    public var rank: Int { shape.count }
    public var hasDynamicShape: Bool { shape.contains { $0 < 0 } }

    /// Elements per padding block: rows are padded to 64 bytes.
    var alignment: Int { max(64 / scalarType.byteSize, 1) }

    /// The layout arrays for this function are made with. Deliberately padded in the mirror:
    /// every row of the innermost dimension is rounded up to 64 bytes and then given one more
    /// 64-byte block (Apple warns that GPU and Neural Engine layouts are padded or interleaved;
    /// padding every row here, aligned or not, means a caller that copies as if the array were
    /// flat gets wrong numbers on every shape with more than one row, not only on some).
    /// Traps on a dynamic shape: resolve it first.
    public var preferredStrides: [Int] {
        precondition(!hasDynamicShape, "CoreAI: preferredStrides of a dynamic shape \(shape): resolve it first")
        guard shape.count >= 2 else { return Layout.rowMajorStrides(shape) }
        var strides = [Int](repeating: 1, count: shape.count)
        let last = shape.count - 1
        let row = max(shape[last], 1)
        strides[last - 1] = (row + alignment - 1) / alignment * alignment + alignment
        for d in stride(from: last - 2, through: 0, by: -1) { strides[d] = strides[d + 1] * max(shape[d + 1], 1) }
        return strides
    }

    /// Bytes an array with this shape, scalar type and the preferred strides spans. Traps on a
    /// dynamic shape.
    public var minimumByteCount: Int { Layout(shape: shape, strides: preferredStrides).span * scalarType.byteSize }

    /// The descriptor with its dynamic dimensions set to `newShape`'s. Changing a static
    /// dimension, or the rank, traps (as on a device).
    public func resolvingDynamicDimensions(_ newShape: [Int]) -> NDArrayDescriptor {
        precondition(newShape.count == shape.count, "CoreAI: shape \(newShape) has not the rank of \(shape)")
        for d in shape.indices where shape[d] >= 0 && newShape[d] != shape[d] {
            preconditionFailure(
                "CoreAI: shape at dimension \(d) of \(newShape[d]) is not a valid substitution for source shape \(shape[d])")
        }
        precondition(newShape.allSatisfy { $0 >= 0 }, "CoreAI: resolving \(shape) to \(newShape) leaves a dimension dynamic")
        return NDArrayDescriptor(shape: newShape, scalarType: scalarType)
    }

    /// Whether `shape` is one this descriptor admits (static dimensions equal).
    func admits(_ shape: [Int]) -> Bool {
        shape.count == self.shape.count && zip(self.shape, shape).allSatisfy { $0 < 0 || $0 == $1 }
    }
}

/// An image a function takes or gives (declared for the descriptor's sake: the Linux runtime
/// the mirror runs on has no image inputs, and no voxport graph takes one).
public struct ImageDescriptor: Sendable, Equatable {
    public let width: Int
    public let height: Int
}

/// One value a function takes or gives.
public struct InferenceValue {
    public enum Kind: Sendable, Equatable { case ndArray, image }

    public enum Descriptor: Sendable, Equatable {
        case ndArray(NDArrayDescriptor)
        case image(ImageDescriptor)
    }

    let array: NDArray

    init(_ array: NDArray) { self.array = array }

    public var kind: Kind { .ndArray }

    /// The array (nil for an image); taking it hands its ownership over.
    public var ndArray: NDArray? { consuming get { array } }

    /// Something that can be given to a function as a read-only input.
    public protocol ViewRepresentable: ~Copyable {
        @_lifetime(borrow self)
        func view() -> InferenceValue.View
    }

    /// Something that can be given to a function as a state or an output written in place.
    public protocol MutableViewRepresentable: ~Copyable {
        @_lifetime(&self)
        mutating func mutableView() -> InferenceValue.MutableView
    }

    /// A borrowed, read-only view of a value.
    public struct View: ~Escapable {
        let raw: NDArray.RawView

        @_lifetime(copy raw)
        init(_ raw: consuming NDArray.RawView) { self.raw = raw }
    }

    /// A borrowed, mutable view of a value.
    public struct MutableView: ~Copyable, ~Escapable {
        let raw: NDArray.MutableRawView

        @_lifetime(copy raw)
        init(_ raw: consuming NDArray.MutableRawView) { self.raw = raw }
    }
}

extension NDArray: InferenceValue.ViewRepresentable, InferenceValue.MutableViewRepresentable {
    @_lifetime(borrow self)
    public func view() -> InferenceValue.View { InferenceValue.View(rawView()) }

    @_lifetime(&self)
    public mutating func mutableView() -> InferenceValue.MutableView { InferenceValue.MutableView(mutableRawView()) }
}

/// A function's signature: its inputs, outputs and states, by name, with their descriptors.
public struct InferenceFunctionDescriptor: Sendable {
    struct Value: Sendable {
        let name: String
        let descriptor: NDArrayDescriptor
    }

    public let name: String
    let inputs: [Value]
    let outputs: [Value]
    let states: [Value]

    init(name: String, inputs: [Value], outputs: [Value], states: [Value]) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.states = states
    }

    public var inputCount: Int { inputs.count }
    public var inputNames: [String] { inputs.map(\.name) }
    public var outputCount: Int { outputs.count }
    public var outputNames: [String] { outputs.map(\.name) }
    public var stateNames: [String] { states.map(\.name) }

    public func inputDescriptor(of inputName: String) -> InferenceValue.Descriptor? {
        inputs.first { $0.name == inputName }.map { .ndArray($0.descriptor) }
    }

    public func outputDescriptor(of outputName: String) -> InferenceValue.Descriptor? {
        outputs.first { $0.name == outputName }.map { .ndArray($0.descriptor) }
    }

    public func stateDescriptor(of stateName: String) -> InferenceValue.Descriptor? {
        states.first { $0.name == stateName }.map { .ndArray($0.descriptor) }
    }
}
