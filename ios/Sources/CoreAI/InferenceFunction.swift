import Foundation
import VoxportWorker

/// One function of a loaded model. `Sendable`: tasks may run it concurrently (here the calls
/// queue at the one runtime child; on a device they may overlap).
///
/// `run` is strict where a device is: every input the descriptor names, at its scalar type and
/// (resolved) shape; a mutable view for every state (a missing one is an error); output views
/// only for outputs. States and output views are written in place, through their strides.
public struct InferenceFunction: Sendable {
    public let descriptor: InferenceFunctionDescriptor
    let asset: LoadedAsset

    /// Run on named input arrays; states and pre-allocated outputs as mutable views.
    public func run(
        inputs: [String: NDArray], states: consuming MutableViews = MutableViews(),
        outputViews: consuming MutableViews = MutableViews()
    ) async throws -> Outputs {
        var given: [(String, ViewEntry)] = []
        for (name, array) in inputs {
            given.append((name, ViewEntry(storage: array.storage, scalarType: array.scalarType, layout: array.layout)))
        }
        return try await call(inputs: given, states: states.entries, outputViews: outputViews.entries)
    }

    /// Run on inputs given as views (`Inputs`); otherwise as `run(inputs: [String: NDArray], ...)`.
    public func run(
        inputs: borrowing Inputs, states: consuming MutableViews = MutableViews(),
        outputViews: consuming MutableViews = MutableViews()
    ) async throws -> Outputs {
        try await call(inputs: inputs.entries, states: states.entries, outputViews: outputViews.entries)
    }

    private func call(inputs: [(String, ViewEntry)], states: [(String, ViewEntry)], outputViews: [(String, ViewEntry)])
        async throws -> Outputs
    {
        let fn = descriptor.name
        let given = Dictionary(inputs, uniquingKeysWith: { a, _ in a })
        if let extra = given.keys.sorted().first(where: { descriptor.inputDescriptor(of: $0) == nil }) {
            throw CoreAIError("\(fn): no input named '\(extra)' (inputs: \(descriptor.inputNames.joined(separator: ", ")))")
        }
        var wire: [WireArray] = []
        for value in descriptor.inputs {
            guard let entry = given[value.name] else { throw CoreAIError("\(fn): input '\(value.name)' was not given") }
            try entry.check(against: value.descriptor, "\(fn): input '\(value.name)'")
            wire.append(try entry.wire(value.name))
        }
        let stateViews = try Self.byName(states, "state", fn)
        for name in stateViews.keys.sorted() where descriptor.stateDescriptor(of: name) == nil {
            throw CoreAIError("\(fn): no state named '\(name)' (states: \(descriptor.stateNames.joined(separator: ", ")))")
        }
        for value in descriptor.states {
            guard let entry = stateViews[value.name] else {
                throw CoreAIError("\(fn): no view for state '\(value.name)': every state must be given a mutable view")
            }
            try entry.check(against: value.descriptor, "\(fn): state '\(value.name)'")
            wire.append(try entry.wire(value.name))
        }
        let outputs = try Self.byName(outputViews, "output view", fn)
        for (name, entry) in outputs {
            guard case .ndArray(let d)? = descriptor.outputDescriptor(of: name) else {
                throw CoreAIError("\(fn): no output named '\(name)' (outputs: \(descriptor.outputNames.joined(separator: ", ")))")
            }
            try entry.check(against: d, "\(fn): output view '\(name)'")
        }
        let reply = try await asset.runtime.run(asset: asset.id, function: fn, arrays: wire, states: descriptor.stateNames)
        // States and output views are written in place, through their own strides.
        for value in descriptor.states {
            try stateViews[value.name]!.fill(from: Self.answer(reply, value.name, fn))
        }
        var returned: [(String, NDArray)] = []
        for value in descriptor.outputs {
            let answer = try Self.answer(reply, value.name, fn)
            if let view = outputs[value.name] {
                try view.fill(from: answer)
            } else {
                returned.append((value.name, try NDArray(answer)))
            }
        }
        return Outputs(returned)
    }

    private static func byName(_ entries: [(String, ViewEntry)], _ what: String, _ fn: String) throws -> [String: ViewEntry] {
        var out: [String: ViewEntry] = [:]
        for (name, entry) in entries {
            guard out.updateValue(entry, forKey: name) == nil else { throw CoreAIError("\(fn): two \(what)s named '\(name)'") }
        }
        return out
    }

    private static func answer(_ reply: [String: WireArray], _ name: String, _ fn: String) throws -> WireArray {
        guard let a = reply[name] else { throw CoreAIError("\(fn): the runtime gave no '\(name)'") }
        return a
    }

    /// The values a function returned (those not written into output views): each can be
    /// taken once.
    public struct Outputs: ~Copyable {
        private var values: [(String, NDArray)]

        init(_ values: [(String, NDArray)]) { self.values = values }

        /// The named output, handed over; nil when there is none or it was taken already.
        public mutating func remove(_ outputName: String) -> InferenceValue? {
            guard let i = values.firstIndex(where: { $0.0 == outputName }) else { return nil }
            return InferenceValue(values.remove(at: i).1)
        }

        public var count: Int { values.count }
        public var names: some Collection<String> { values.map(\.0) }
    }

    /// Mutable views by name: the states of a call (all of them), or outputs to write in place.
    public struct MutableViews: ~Copyable, ~Escapable {
        var entries: [(String, ViewEntry)] = []

        @_lifetime(immortal)
        public init() {}

        /// A value (an NDArray) viewed mutably for the call; it must outlive the views.
        @_lifetime(self: copy self, &value)
        public mutating func insert(_ value: inout some InferenceValue.MutableViewRepresentable & ~Copyable, for name: String) {
            let view = value.mutableView()
            entries.append((name, ViewEntry(view.raw)))
        }

        @_lifetime(self: copy self, copy mutableView)
        public mutating func insert<Element: BitwiseCopyable>(_ mutableView: consuming NDArray.MutableView<Element>, for name: String) {
            let type = NDArray.ScalarType.of(Element.self) ?? .uint8
            entries.append((name, ViewEntry(storage: mutableView.storage, scalarType: type, layout: mutableView.layout)))
        }

        @_lifetime(self: copy self, copy mutableRawView)
        public mutating func insert(_ mutableRawView: consuming NDArray.MutableRawView, for name: String) {
            entries.append((name, ViewEntry(mutableRawView)))
        }
    }

    /// Input values as views (the `run(inputs: borrowing Inputs, ...)` form).
    public struct Inputs: ~Copyable, ~Escapable {
        var entries: [(String, ViewEntry)] = []

        @_lifetime(immortal)
        public init() {}

        @_lifetime(self: copy self, copy rawView)
        public mutating func insert(_ rawView: consuming NDArray.RawView, for inputName: String) {
            entries.append((inputName, ViewEntry(storage: rawView.storage, scalarType: rawView.scalarType, layout: rawView.layout)))
        }

        @_lifetime(self: copy self, borrow value)
        public mutating func insert(_ value: borrowing some InferenceValue.ViewRepresentable & ~Copyable, for inputName: String) {
            let raw = value.view().raw
            entries.append((inputName, ViewEntry(storage: raw.storage, scalarType: raw.scalarType, layout: raw.layout)))
        }

        @_lifetime(self: copy self, copy view)
        public mutating func insert<Element: BitwiseCopyable>(_ view: consuming NDArray.View<Element>, for inputName: String) {
            let type = NDArray.ScalarType.of(Element.self) ?? .uint8
            entries.append((inputName, ViewEntry(storage: view.storage, scalarType: type, layout: view.layout)))
        }
    }
}

/// What a view refers to, kept by the mirror for the length of one call (the public view types
/// make sure the array outlives it and nobody else writes it meanwhile).
struct ViewEntry: Sendable {
    let storage: NDStorage
    let scalarType: NDArray.ScalarType
    let layout: Layout

    init(storage: NDStorage, scalarType: NDArray.ScalarType, layout: Layout) {
        self.storage = storage
        self.scalarType = scalarType
        self.layout = layout
    }

    init(_ raw: borrowing NDArray.MutableRawView) {
        self.init(storage: raw.storage, scalarType: raw.scalarType, layout: raw.layout)
    }

    /// The runtime's expectations are strict: the scalar type exactly, the shape up to dynamic dimensions.
    func check(against d: NDArrayDescriptor, _ what: String) throws {
        guard scalarType == d.scalarType else {
            throw CoreAIError("\(what) is .\(scalarType), the function wants .\(d.scalarType)")
        }
        guard d.admits(layout.shape) else {
            throw CoreAIError("\(what) has shape \(layout.shape), the function wants \(d.shape)")
        }
    }

    /// The logical elements, contiguous, as they cross to the runtime.
    func wire(_ name: String) throws -> WireArray {
        guard let dtype = scalarType.wireName else {
            throw CoreAIError("'\(name)': the Linux runtime mirror cannot carry .\(scalarType) arrays")
        }
        let size = scalarType.byteSize
        var bytes = Data(count: layout.count * size)
        bytes.withUnsafeMutableBytes { out in
            if let base = out.baseAddress { layout.gather(from: storage.bytes, into: base, elementSize: size) }
        }
        return WireArray(name: name, dtype: dtype, shape: layout.shape, bytes: bytes)
    }

    /// Write the runtime's answer for this view, through its strides.
    func fill(from answer: WireArray) throws {
        guard answer.dtype == scalarType.wireName, answer.shape == layout.shape else {
            throw CoreAIError(
                "'\(answer.name)': the runtime answered \(answer.dtype) \(answer.shape) for a .\(scalarType) \(layout.shape) view")
        }
        answer.bytes.withUnsafeBytes { src in
            if let base = src.baseAddress { layout.scatter(from: base, into: storage.bytes, elementSize: scalarType.byteSize) }
        }
    }
}

extension NDArray {
    /// A returned output: contiguous, as Core AI returns its outputs.
    init(_ answer: WireArray) throws {
        guard let type = ScalarType(wireName: answer.dtype) else {
            throw CoreAIError("'\(answer.name)': the runtime answered dtype \(answer.dtype), which NDArray cannot hold")
        }
        self.init(shape: answer.shape, scalarType: type)
        let size = type.byteSize
        answer.bytes.withUnsafeBytes { src in
            if let base = src.baseAddress { storage.bytes.copyMemory(from: base, byteCount: layout.count * size) }
        }
    }
}

/// An error the mirror raises itself (Core AI has no public error type: callers see `Error`).
struct CoreAIError: Error, CustomStringConvertible, LocalizedError {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
    var errorDescription: String? { message }
}
