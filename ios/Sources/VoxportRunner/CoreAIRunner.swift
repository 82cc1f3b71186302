// CoreAIRunner: the bundle's graphs on Core AI's Swift API.
//
// Compiled wherever a `CoreAI` module exists: Apple's framework on macOS / iOS 27 devices, and
// on Linux the package's own `CoreAI` mirror (ios/Sources/CoreAI), which declares Apple's surface
// and runs it on the Linux Core AI runtime through `voxport serve --assets` — so this file is
// built, run and tested in CI here. What only an Apple device can prove (the framework's own
// numerics, GPU / Neural Engine layouts, its specialisation) is listed in ios/README.md.
#if canImport(CoreAI)
    import CoreAI
    import Foundation
    import VoxportCore

    /// A GraphRunner over Core AI: each graph's `.aimodel` loaded once (CPU-only by default:
    /// parity runs need it, and fp32 stateful graphs abort under default options), functions
    /// loaded on first use. Element types come from each array's own `scalarType` (fp16 and
    /// int32 inputs, fp16 states and outputs), every fill and read follows the array's strides,
    /// dynamic dimensions are resolved from the inputs' shapes, and the state arrays of each graph
    /// and `state` key are owned here and handed to every call in place — never copied.
    @available(macOS 27.0, iOS 27.0, *)
    public actor CoreAIRunner: GraphRunner {
        public nonisolated let manifest: Manifest
        private let bundle: ModelBundle
        private let options: SpecializationOptions
        private let copies: CoreAIArrays.Copies
        private var models: [String: AIModel] = [:]
        private var functions: [String: InferenceFunction] = [:]  // "graph.function"
        private var states: [String: StateArrays] = [:]  // "graph\u{0}state"
        private var busy: Set<String> = []  // state keys inside a call
        private var closed = false

        /// Open (and verify) the bundle; graphs load on first use.
        public init(bundle url: URL, options: SpecializationOptions = .cpuOnly) throws {
            try self.init(bundle: url, options: options, copies: .strided)
        }

        /// `copies: .flat` is the deliberate stride-blind fault the parity tests prove they catch.
        init(bundle url: URL, options: SpecializationOptions, copies: CoreAIArrays.Copies) throws {
            bundle = try ModelBundle.open(url)
            manifest = bundle.manifest
            self.options = options
            self.copies = copies
        }

        /// `VP_UNITS`: `cpu-only` (the parity setting: a *preferred* unit may still hand ops to
        /// others and move the numerics) or a preferred kind.
        public static func options(units: String) throws -> SpecializationOptions {
            switch units {
            case "cpu-only": return .cpuOnly
            case "cpu": return SpecializationOptions(preferredComputeUnitKind: .cpu)
            case "gpu": return SpecializationOptions(preferredComputeUnitKind: .gpu)
            case "ane": return SpecializationOptions(preferredComputeUnitKind: .neuralEngine)
            default: throw RunnerError(.user, "unknown compute units '\(units)': cpu-only, cpu, gpu or ane")
            }
        }

        public func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws
            -> [String: Tensor]
        {
            guard !closed else { throw RunnerError(.closed, "this CoreAIRunner is closed") }
            let fn = try await loadFunction(graph: graph, function: function)
            let d = fn.descriptor
            let call = "\(graph).\(function)"
            if let extra = inputs.keys.sorted().first(where: { !d.inputNames.contains($0) }) {
                throw RunnerError(.inputSpec, "\(call): no input '\(extra)' (inputs: \(d.inputNames.joined(separator: ", ")))")
            }
            var args: [String: NDArray] = [:]
            for name in d.inputNames {
                guard let t = inputs[name] else { throw RunnerError(.inputSpec, "\(call): missing input '\(name)'") }
                guard case .ndArray(let desc)? = d.inputDescriptor(of: name) else {
                    throw RunnerError(.runtime, "\(call): input '\(name)' is not an NDArray")
                }
                guard Self.admits(desc.shape, t.shape) else {
                    throw RunnerError(.inputSpec, "input '\(name)': shape \(t.shape), the graph wants \(desc.shape)")
                }
                var array = NDArray(descriptor: desc.hasDynamicShape ? desc.resolvingDynamicDimensions(t.shape) : desc)
                try CoreAIArrays.fill(&array, from: t, name: name, copies: copies)
                args[name] = array
            }
            var outputs: InferenceFunction.Outputs
            do {
                if d.stateNames.isEmpty {
                    outputs = try await fn.run(inputs: args)
                } else {
                    let key = graph + "\u{0}" + state
                    guard busy.insert(key).inserted else {
                        throw RunnerError(
                            .user, "\(call): state '\(state)' of graph '\(graph)' is in use by another call: "
                                + "the calls of one state key are one sequence, await each before the next")
                    }
                    defer { busy.remove(key) }
                    outputs = try await stateArrays(key, fn).run(fn, inputs: args)
                }
            } catch let e as RunnerError {
                throw e
            } catch {
                throw RunnerError(.runtime, "\(call): \(error)")
            }
            var result: [String: Tensor] = [:]
            for name in d.outputNames {
                guard let array = outputs.remove(name)?.ndArray else {
                    throw RunnerError(.runtime, "\(call): no output '\(name)'")
                }
                result[name] = try CoreAIArrays.read(array, name: name, copies: copies)
            }
            return result
        }

        public func resetState(graph: String, state: String) async throws {
            guard !closed else { throw RunnerError(.closed, "this CoreAIRunner is closed") }
            let key = graph + "\u{0}" + state
            guard !busy.contains(key) else {
                throw RunnerError(.user, "state '\(state)' of graph '\(graph)' is in use by a call: await it before resetting")
            }
            try states[key]?.zero()
        }

        public func close() async {
            closed = true
            functions = [:]
            models = [:]
            states = [:]
        }

        /// Whether an array of `shape` fits a descriptor's shape (negative entries are dynamic).
        static func admits(_ descriptor: [Int], _ shape: [Int]) -> Bool {
            descriptor.count == shape.count && zip(descriptor, shape).allSatisfy { $0 < 0 || $0 == $1 }
        }

        private func loadFunction(graph: String, function: String) async throws -> InferenceFunction {
            let key = "\(graph).\(function)"
            if let fn = functions[key] { return fn }
            _ = try manifest.function(graph: graph, function: function)
            let model: AIModel
            if let m = models[graph] {
                model = m
            } else {
                let url = try bundle.assetURL(graph: graph)
                do {
                    model = try await AIModel(contentsOf: url, options: options)
                } catch {
                    throw RunnerError(.runtime, "graph '\(graph)': Core AI could not load \(url.lastPathComponent): \(error)")
                }
                models[graph] = model
            }
            guard let fn = try model.loadFunction(named: function) else {
                throw RunnerError(.user, "graph '\(graph)' has no function '\(function)' in its asset")
            }
            functions[key] = fn
            return fn
        }

        /// The state arrays of `key`, made (zeroed, in the function's preferred layout) on first use.
        private func stateArrays(_ key: String, _ fn: InferenceFunction) throws -> StateArrays {
            if let arrays = states[key] { return arrays }
            let arrays = try StateArrays(fn.descriptor)
            states[key] = arrays
            return arrays
        }
    }

    /// One graph's state arrays under one key, owned by reference so every call mutates the
    /// same memory: a value held in a dictionary and copied out for a call would be shared,
    /// and the first write through a view would copy the whole KV cache (copy-on-write).
    @available(macOS 27.0, iOS 27.0, *)
    final class StateArrays: @unchecked Sendable {
        // @unchecked: only its CoreAIRunner (an actor) touches it, and while a call runs outside
        // the actor (Core AI is awaited there) the runner's `busy` set keeps every other call,
        // reset and zeroing off this key; `close` only drops the runner's reference.
        let names: [String]
        var arrays: [NDArray]

        init(_ d: InferenceFunctionDescriptor) throws {
            names = d.stateNames
            arrays = try d.stateNames.map { name in
                guard case .ndArray(let desc)? = d.stateDescriptor(of: name), !desc.hasDynamicShape else {
                    throw RunnerError(.runtime, "\(d.name): state '\(name)' is not a static-shaped NDArray")
                }
                return NDArray(descriptor: desc)
            }
            try zero()
        }

        /// Zero every state (a fresh sequence): new arrays are not zeroed, on a device or here.
        func zero() throws {
            for i in arrays.indices { try CoreAIArrays.zero(&arrays[i], name: names[i]) }
        }

        /// One call with every state given as a mutable view of the arrays held here. The views
        /// are taken in a loop, which Swift's lifetime checker cannot follow through an array
        /// element: each view's lifetime is tied to `self` instead (as Apple's own state
        /// handlers do), which holds because this object owns the arrays, outlives the call, and
        /// the runner lets one call at a time use it.
        func run(_ fn: InferenceFunction, inputs: [String: NDArray]) async throws -> InferenceFunction.Outputs {
            var views = InferenceFunction.MutableViews()
            for i in arrays.indices {
                views.insert(_overrideLifetime(arrays[i].mutableRawView(), borrowing: self), for: names[i])
            }
            return try await fn.run(inputs: inputs, states: consume views)
        }
    }
#endif
