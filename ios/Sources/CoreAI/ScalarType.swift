// The `CoreAI` mirror: Apple's Core AI Swift surface, declared from Apple's documentation and run
// on the Linux Core AI runtime through a `voxport serve --assets` child. Built only where Apple's
// framework is absent (Package.swift declares this target on Linux alone); on a Mac or an
// iPhone `import CoreAI` is Apple's. README.md beside these files says what is mirrored, what
// is not, and where the mirror is stricter than a device on purpose.

extension NDArray {
    /// The element type of an array (the cases the mirror can hold; Apple's enum has more,
    /// sub-byte and complex types among them, which no voxport graph uses).
    public enum ScalarType: Hashable, Sendable, CaseIterable {
        case float16, bfloat16, float32, float64
        case int8, int16, int32, int64
        case uint8, uint16, uint32, uint64
        case bool

        /// Bytes per element.
        var byteSize: Int {
            switch self {
            case .int8, .uint8, .bool: return 1
            case .float16, .bfloat16, .int16, .uint16: return 2
            case .float32, .int32, .uint32: return 4
            case .float64, .int64, .uint64: return 8
            }
        }

        /// numpy's name, the dtype on the worker protocol's wire; nil where the Linux runtime's
        /// Python side has no numpy type (bfloat16) or the protocol carries none (the unsigned
        /// types wider than a byte).
        var wireName: String? {
            switch self {
            case .float16: return "float16"
            case .float32: return "float32"
            case .float64: return "float64"
            case .int8: return "int8"
            case .int16: return "int16"
            case .int32: return "int32"
            case .int64: return "int64"
            case .uint8: return "uint8"
            case .bool: return "bool"
            case .bfloat16, .uint16, .uint32, .uint64: return nil
            }
        }

        init?(wireName: String) {
            guard let t = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
            self = t
        }

        /// Whether a typed view of Swift type `T` reads this scalar type correctly: its own
        /// Swift type, or the unsigned integer of its width (the raw bits). bfloat16 also takes
        /// Float16, as Apple's own state code copies bf16 caches through Float16 views (bits
        /// moved, never read as numbers). Anything else — Float over float16, Float over int32 —
        /// is the mistake a device answers with wrong numbers or a trap: the mirror traps.
        func accepts<T>(_: T.Type) -> Bool {
            let t = ObjectIdentifier(T.self)
            func any(_ types: Any.Type...) -> Bool { types.contains { ObjectIdentifier($0) == t } }
            switch self {
            case .float16: return any(Float16.self, UInt16.self)
            case .bfloat16: return any(Float16.self, UInt16.self)
            case .float32: return any(Float.self, UInt32.self)
            case .float64: return any(Double.self, UInt64.self)
            case .int8: return any(Int8.self, UInt8.self)
            case .int16: return any(Int16.self, UInt16.self)
            case .int32: return any(Int32.self, UInt32.self)
            case .int64: return any(Int64.self, UInt64.self, Int.self)
            case .uint8: return any(UInt8.self)
            case .uint16: return any(UInt16.self)
            case .uint32: return any(UInt32.self)
            case .uint64: return any(UInt64.self, UInt.self)
            case .bool: return any(Bool.self, UInt8.self)
            }
        }

        /// The scalar type of a Swift element type (for `NDArray(scalars:shape:)`).
        static func of<T>(_: T.Type) -> ScalarType? {
            let t = ObjectIdentifier(T.self)
            let table: [(Any.Type, ScalarType)] = [
                (Float16.self, .float16), (Float.self, .float32), (Double.self, .float64),
                (Int8.self, .int8), (Int16.self, .int16), (Int32.self, .int32), (Int64.self, .int64),
                (UInt8.self, .uint8), (UInt16.self, .uint16), (UInt32.self, .uint32), (UInt64.self, .uint64),
                (Bool.self, .bool),
            ]
            return table.first { ObjectIdentifier($0.0) == t }?.1
        }
    }
}

/// The trap a view of the wrong element type springs (`view(as:)`, `mutableView(as:)`).
func checkElementType<T>(_: T.Type, _ scalarType: NDArray.ScalarType, _ what: String) {
    precondition(
        scalarType.accepts(T.self),
        "CoreAI: \(what) as \(T.self) of an array whose scalarType is .\(scalarType): "
            + "switch on the array's own scalarType for the element type")
}
