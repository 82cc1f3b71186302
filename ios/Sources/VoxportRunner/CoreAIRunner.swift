// CoreAIRunner: the bundle's graphs on Apple's Core AI framework (macOS 15 / iOS 18 devices).
//
// NOT COMPILED ANYWHERE YET: there is no CoreAI module on Linux, where this package is built and
// tested, so everything inside `#if canImport(CoreAI)` is written from the API as DESIGN.md
// records it (apple/coreai-models' own Swift code) and has never been type-checked. Expect small
// fixes on the first Mac build (the closure shapes of the NDArray views, the state descriptor
// call, the async bridging). Keep it small until then; the hosts are tested through
// WorkerRunner and ReplayRunner, which run the same GraphRunner protocol.
#if canImport(CoreAI)
    import CoreAI
    import Foundation
    import VoxportCore

    /// A GraphRunner over Core AI: each graph's `.aimodel` loaded once (CPU-only by default:
    /// parity runs need it, and fp32 stateful graphs abort under default options), functions
    /// loaded on first use, state arrays owned here per graph and `state` key and mutated in
    /// place by the stateful calls (the same arrays passed to every call, as Python's Session).
    public final class CoreAIRunner: GraphRunner, @unchecked Sendable {
        public let manifest: Manifest
        private let bundle: ModelBundle
        private let options: SpecializationOptions
        private var models: [String: AIModel] = [:]
        private var functions: [String: InferenceFunction] = [:]  // "graph.function"
        private var states: [String: [String: NDArray]] = [:]  // "graph\u{0}state"
        private var closed = false

        /// Open (and verify) the bundle; graphs load on first use.
        public init(
            bundle url: URL,
            options: SpecializationOptions = .cpuOnly
        ) throws {
            bundle = try ModelBundle.open(url)
            manifest = bundle.manifest
            self.options = options
        }

        /// `VP_UNITS`: `cpu-only` (the parity setting: a *preferred* unit may still hand ops to
        /// others and move the numerics) or a preferred kind. The kind names are unverified
        /// until the first Mac build.
        public static func options(units: String) throws -> SpecializationOptions {
            switch units {
            case "cpu-only": return .cpuOnly
            case "cpu": return SpecializationOptions(preferredComputeUnitKind: .cpu)
            case "gpu": return SpecializationOptions(preferredComputeUnitKind: .gpu)
            case "ane": return SpecializationOptions(preferredComputeUnitKind: .neuralEngine)
            default: throw RunnerError(.user, "unknown compute units '\(units)': cpu-only, cpu, gpu or ane")
            }
        }

        public func run(graph: String, function: String, inputs: [String: Tensor], state: String) throws
            -> [String: Tensor]
        {
            guard !closed else { throw RunnerError(.closed, "this CoreAIRunner is closed") }
            let spec = try manifest.function(graph: graph, function: function)
            let fn = try loadFunction(graph: graph, function: function)
            var args: [String: NDArray] = [:]
            for input in spec.inputs {
                guard let t = inputs[input.name] else {
                    throw RunnerError(.inputSpec, "\(graph).\(function): missing input '\(input.name)'")
                }
                guard t.shape == input.shape else {
                    throw RunnerError(
                        .inputSpec, "input '\(input.name)': shape \(t.shape), the graph wants \(input.shape ?? [])")
                }
                guard case .ndArray(let d)? = fn.descriptor.inputDescriptor(of: input.name) else {
                    throw RunnerError(.runtime, "\(graph).\(function): input '\(input.name)' is not an NDArray")
                }
                args[input.name] = try Self.fill(NDArray(descriptor: d), from: t, dtype: input.dtype ?? "float32")
            }
            var out: [String: NDArray]
            if spec.states.isEmpty {
                out = try blocking { try await fn.run(inputs: args) }
            } else {
                let key = graph + "\u{0}" + state
                var arrays = try states[key] ?? newState(fn, spec.states)
                out = try blocking {
                    var views = InferenceFunction.MutableViews()
                    for name in arrays.keys.sorted() { views.insert(&arrays[name]!, for: name) }
                    return try await fn.run(inputs: args, states: consume views)
                }
                states[key] = arrays
            }
            var result: [String: Tensor] = [:]
            for o in spec.outputs {
                guard let a = out[o.name] else { throw RunnerError(.runtime, "\(graph).\(function): no output '\(o.name)'") }
                result[o.name] = try Self.read(a, shape: o.shape ?? [], dtype: o.dtype ?? "float32")
            }
            return result
        }

        public func resetState(graph: String, state: String) throws {
            states[graph + "\u{0}" + state] = nil
        }

        public func close() {
            closed = true
            functions = [:]
            models = [:]
            states = [:]
        }

        private func loadFunction(graph: String, function: String) throws -> InferenceFunction {
            if let fn = functions["\(graph).\(function)"] { return fn }
            let model: AIModel
            if let m = models[graph] {
                model = m
            } else {
                let url = try bundle.assetURL(graph: graph)
                let opts = options
                model = try blocking { try await AIModel(contentsOf: url, options: opts) }
                models[graph] = model
            }
            guard let fn = try model.loadFunction(named: function) else {
                throw RunnerError(.user, "graph '\(graph)' has no function '\(function)' in its asset")
            }
            functions["\(graph).\(function)"] = fn
            return fn
        }

        private func newState(_ fn: InferenceFunction, _ specs: [TensorSpec]) throws -> [String: NDArray] {
            var out: [String: NDArray] = [:]
            for s in specs {
                // Unverified: the state descriptor accessor's name.
                guard case .ndArray(let d)? = fn.descriptor.stateDescriptor(of: s.name) else {
                    throw RunnerError(.runtime, "state '\(s.name)' is not an NDArray")
                }
                let zeros = Tensor(shape: s.shape ?? [], storage: .float32([Float](repeating: 0, count: (s.shape ?? []).reduce(1, *))))
                out[s.name] = try Self.fill(NDArray(descriptor: d), from: zeros, dtype: s.dtype ?? "float32")
            }
            return out
        }

        private static func fill(_ array: NDArray, from t: Tensor, dtype: String) throws -> NDArray {
            var a = array
            switch (dtype, t.storage) {
            case ("float32", .float32(let v)):
                a.mutableView(as: Float.self).withUnsafeMutablePointer { p in
                    v.withUnsafeBufferPointer { p.update(from: $0.baseAddress!, count: v.count) }
                }
            case ("int32", .int32(let v)):
                a.mutableView(as: Int32.self).withUnsafeMutablePointer { p in
                    v.withUnsafeBufferPointer { p.update(from: $0.baseAddress!, count: v.count) }
                }
            case ("int32", .int64(let v)):
                let narrowed = try v.map { x -> Int32 in
                    guard let y = Int32(exactly: x) else { throw RunnerError(.inputSpec, "an int64 value does not fit int32") }
                    return y
                }
                return try fill(a, from: Tensor(shape: t.shape, storage: .int32(narrowed)), dtype: dtype)
            default:
                throw RunnerError(.inputSpec, "dtype \(t.dtype) for a \(dtype) input is not supported by CoreAIRunner yet")
            }
            return a
        }

        private static func read(_ a: NDArray, shape: [Int], dtype: String) throws -> Tensor {
            let n = shape.reduce(1, *)
            switch dtype {
            case "float32":
                let v = a.view(as: Float.self).withUnsafePointer { Array(UnsafeBufferPointer(start: $0, count: n)) }
                return Tensor(shape: shape, storage: .float32(v))
            case "int32":
                let v = a.view(as: Int32.self).withUnsafePointer { Array(UnsafeBufferPointer(start: $0, count: n)) }
                return Tensor(shape: shape, storage: .int32(v))
            default:
                throw RunnerError(.runtime, "output dtype \(dtype) is not supported by CoreAIRunner yet")
            }
        }

        /// Run async Core AI work from the synchronous GraphRunner API (the caller's thread waits).
        private func blocking<T>(_ body: @escaping () async throws -> T) throws -> T {
            final class Box: @unchecked Sendable { var result: Result<T, Error>? }
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) let work = body
            Task.detached {
                do { box.result = .success(try await work()) } catch { box.result = .failure(error) }
                done.signal()
            }
            done.wait()
            return try box.result!.get()
        }
    }
#endif
