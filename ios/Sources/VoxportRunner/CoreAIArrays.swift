// Host tensors into and out of Core AI arrays, whatever their layout: the element type from
// the array's own `scalarType` (an fp16 graph takes and gives float16, ids are int32), every
// element placed through the strides (arrays made from descriptors may be padded on a GPU or the
// Neural Engine — and always are under the Linux mirror).
#if canImport(CoreAI)
    import CoreAI
    import VoxportCore

    @available(macOS 27.0, iOS 27.0, *)
    enum CoreAIArrays {
        /// How elements are placed: through the strides, or (a deliberate fault, for the tests
        /// that prove a stride-blind copy is caught) as if the array were a flat buffer.
        enum Copies: Sendable {
            case strided
            case flat
        }

        /// Fill `array` with `t`'s elements in row-major order, converted to the array's scalar
        /// type (float64 to float32 / float16, int64 to int32 when it fits).
        static func fill(_ array: inout NDArray, from t: Tensor, name: String, copies: Copies) throws {
            switch array.scalarType {
            case .float32:
                write(&array, try floats(t, name), copies: copies)
            case .int32:
                write(&array, try ints(t, name), copies: copies)
            case .float16:
                #if (os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64)
                    throw RunnerError(.inputSpec, "input '\(name)' is float16, which an x86_64 Mac has no type for")
                #else
                    // Float16(Float) rounds to nearest even, as numpy's astype(float16) does.
                    write(&array, try floats(t, name).map { Float16($0) }, copies: copies)
                #endif
            default:
                throw RunnerError(.inputSpec, "input '\(name)': the graph takes \(array.scalarType), which CoreAIRunner cannot fill")
            }
        }

        /// An output as a host tensor (float16 widened to float32, exactly).
        static func read(_ array: NDArray, name: String, copies: Copies) throws -> Tensor {
            switch array.scalarType {
            case .float32:
                return Tensor(shape: array.shape, storage: .float32(elements(array, Float.self, copies: copies)))
            case .int32:
                return Tensor(shape: array.shape, storage: .int32(elements(array, Int32.self, copies: copies)))
            case .float16:
                #if (os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64)
                    throw RunnerError(.runtime, "output '\(name)' is float16, which an x86_64 Mac has no type for")
                #else
                    return Tensor(shape: array.shape, storage: .float32(elements(array, Float16.self, copies: copies).map(Float.init)))
                #endif
            default:
                throw RunnerError(.runtime, "output '\(name)' is \(array.scalarType), which CoreAIRunner cannot read")
            }
        }

        /// Zero every element of a state array (new arrays hold whatever memory held).
        static func zero(_ array: inout NDArray, name: String) throws {
            let count = array.shape.reduce(1, *)
            switch array.scalarType {
            case .float32: write(&array, [Float](repeating: 0, count: count), copies: .strided)
            case .int32: write(&array, [Int32](repeating: 0, count: count), copies: .strided)
            case .float16, .bfloat16:
                // All-zero bits are +0 in both half formats.
                write(&array, [UInt16](repeating: 0, count: count), copies: .strided)
            default:
                throw RunnerError(.runtime, "state '\(name)' is \(array.scalarType), which CoreAIRunner cannot hold")
            }
        }

        static func write<T: BitwiseCopyable>(_ array: inout NDArray, _ values: [T], copies: Copies) {
            let view = array.mutableView(as: T.self)
            view.withUnsafeMutablePointer { base, shape, strides in
                if copies == .flat {
                    for i in values.indices { base[i] = values[i] }
                    return
                }
                var i = 0
                forEachOffset(shape, strides) { offset in
                    base[offset] = values[i]
                    i += 1
                }
            }
        }

        static func elements<T: BitwiseCopyable>(_ array: NDArray, _: T.Type, copies: Copies) -> [T] {
            array.view(as: T.self).withUnsafePointer { base, shape, strides in
                var count = 1
                for d in 0..<shape.count { count *= shape[d] }
                if copies == .flat { return Array(UnsafeBufferPointer(start: base, count: count)) }
                var out: [T] = []
                out.reserveCapacity(count)
                forEachOffset(shape, strides) { out.append(base[$0]) }
                return out
            }
        }

        /// The element offset of every element, in row-major order.
        static func forEachOffset(_ shape: Span<Int>, _ strides: Span<Int>, _ body: (Int) -> Void) {
            let rank = shape.count
            var count = 1
            for d in 0..<rank { count *= shape[d] }
            guard count > 0 else { return }
            var index = [Int](repeating: 0, count: rank)
            var offset = 0
            for _ in 0..<count {
                body(offset)
                var d = rank - 1
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

        private static func floats(_ t: Tensor, _ name: String) throws -> [Float] {
            switch t.storage {
            case .float32(let v): return v
            case .float64(let v): return v.map(Float.init)
            default: throw RunnerError(.inputSpec, "input '\(name)': dtype \(t.dtype), the graph wants float")
            }
        }

        private static func ints(_ t: Tensor, _ name: String) throws -> [Int32] {
            switch t.storage {
            case .int32(let v): return v
            case .int64(let v):
                return try v.map { x in
                    guard let y = Int32(exactly: x) else {
                        throw RunnerError(.inputSpec, "input '\(name)': an int64 value does not fit int32")
                    }
                    return y
                }
            case .bool(let v): return v.map { $0 ? 1 : 0 }
            default: throw RunnerError(.inputSpec, "input '\(name)': dtype \(t.dtype), the graph wants int32")
            }
        }
    }
#endif
