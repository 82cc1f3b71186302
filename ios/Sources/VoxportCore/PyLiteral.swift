/// The subset of Python literal syntax an `.npy` header uses: `{'descr': '<f4',
/// 'fortran_order': False, 'shape': (3, 4), }` — dicts, str, int, True/False, tuples, lists.
enum PyLiteral: Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case none
    case tuple([PyLiteral])
    case list([PyLiteral])
    case dict([(String, PyLiteral)])

    static func == (a: PyLiteral, b: PyLiteral) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.none, .none): return true
        case (.tuple(let x), .tuple(let y)), (.list(let x), .list(let y)): return x == y
        case (.dict(let x), .dict(let y)): return x.map(\.0) == y.map(\.0) && x.map(\.1) == y.map(\.1)
        default: return false
        }
    }

    static func parse(_ text: String) throws -> PyLiteral {
        var p = Parser(chars: Array(text.unicodeScalars))
        let value = try p.value()
        p.skipSpace()
        guard p.pos == p.chars.count else { throw p.fail("trailing text") }
        return value
    }

    private struct Parser {
        let chars: [Unicode.Scalar]
        var pos = 0

        func fail(_ why: String) -> VoxportError {
            VoxportError(.malformedFile, "npy header: \(why) at character \(pos)")
        }

        mutating func skipSpace() {
            while pos < chars.count, chars[pos].properties.isWhitespace { pos += 1 }
        }

        mutating func value() throws -> PyLiteral {
            skipSpace()
            guard pos < chars.count else { throw fail("unexpected end") }
            switch chars[pos] {
            case "{": return .dict(try sequence(close: "}") { p in
                    guard case .string(let k) = try p.value() else { throw p.fail("dict key is not a string") }
                    p.skipSpace()
                    guard p.pos < p.chars.count, p.chars[p.pos] == ":" else { throw p.fail("expected ':'") }
                    p.pos += 1
                    return (k, try p.value())
                })
            case "(": return .tuple(try sequence(close: ")") { try $0.value() })
            case "[": return .list(try sequence(close: "]") { try $0.value() })
            case "'", "\"": return .string(try string())
            default: return try word()
            }
        }

        /// Items separated by commas, an optional trailing comma, then `close`.
        mutating func sequence<T>(close: Unicode.Scalar, item: (inout Parser) throws -> T) throws -> [T] {
            pos += 1
            var out: [T] = []
            while true {
                skipSpace()
                guard pos < chars.count else { throw fail("unclosed '\(close)'") }
                if chars[pos] == close { pos += 1; return out }
                out.append(try item(&self))
                skipSpace()
                guard pos < chars.count else { throw fail("unclosed '\(close)'") }
                if chars[pos] == "," { pos += 1 } else if chars[pos] != close { throw fail("expected ',' or '\(close)'") }
            }
        }

        mutating func string() throws -> String {
            let quote = chars[pos]
            pos += 1
            var out = String.UnicodeScalarView()
            while pos < chars.count, chars[pos] != quote {
                if chars[pos] == "\\" {
                    pos += 1
                    guard pos < chars.count else { break }
                }
                out.append(chars[pos])
                pos += 1
            }
            guard pos < chars.count else { throw fail("unterminated string") }
            pos += 1
            return String(out)
        }

        mutating func word() throws -> PyLiteral {
            let start = pos
            while pos < chars.count, chars[pos] == "-" || chars[pos] == "_" || chars[pos].properties.isAlphabetic
                || ("0"..."9").contains(chars[pos])
            {
                pos += 1
            }
            let w = String(String.UnicodeScalarView(chars[start..<pos]))
            switch w {
            case "True": return .bool(true)
            case "False": return .bool(false)
            case "None": return .none
            default:
                // numpy writes shapes as plain ints; some writers add an `L` suffix (Python 2).
                let digits = w.hasSuffix("L") ? String(w.dropLast()) : w
                guard let n = Int(digits) else { throw fail("unexpected token '\(w)'") }
                return .int(n)
            }
        }
    }
}
