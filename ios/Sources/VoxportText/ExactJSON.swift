/// A JSON reader for tokenizer files that keeps every string's Unicode scalars exactly and
/// every object's keys in file order.
///
/// Foundation's `JSONSerialization` gives `[String: Any]`, and Swift's `String` hashes and
/// compares by canonical equivalence: a vocabulary holding both "é" (U+00E9) and "e" + U+0301
/// would lose one of them, silently. Here objects are arrays of (key, value) pairs and the
/// tokenizer keys its tables by UTF-8 bytes.
public indirect enum ExactJSON: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ExactJSON])
    case object([(key: String, value: ExactJSON)])

    public static func parse(_ bytes: [UInt8]) throws -> ExactJSON {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.at == bytes.count else { throw reader.fail("text after the JSON value") }
        return value
    }

    /// The first value under `key` (objects only).
    public subscript(key: String) -> ExactJSON? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var array: [ExactJSON]? { if case .array(let a) = self { a } else { nil } }
    public var pairs: [(key: String, value: ExactJSON)]? { if case .object(let p) = self { p } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var isNull: Bool { if case .null = self { true } else { false } }
    /// A whole number (ids, ranks), or nil.
    public var int: Int? {
        guard case .number(let d) = self, d == d.rounded(), abs(d) < 9.0e15 else { return nil }
        return Int(d)
    }
}

private struct Reader {
    let bytes: [UInt8]
    var at = 0
    static let maxDepth = 512

    func fail(_ what: String) -> TokenizerError {
        TokenizerError("tokenizer JSON: \(what) at byte \(at)")
    }

    mutating func skipSpace() {
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
    }

    mutating func expect(_ literal: String) throws {
        for b in literal.utf8 {
            guard at < bytes.count, bytes[at] == b else { throw fail("expected \(literal)") }
            at += 1
        }
    }

    mutating func value(depth: Int) throws -> ExactJSON {
        guard depth < Self.maxDepth else { throw fail("nesting deeper than \(Self.maxDepth)") }
        guard at < bytes.count else { throw fail("unexpected end") }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default: return .number(try number())
        }
    }

    mutating func object(depth: Int) throws -> ExactJSON {
        at += 1
        var pairs: [(key: String, value: ExactJSON)] = []
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(pairs) }
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try string()
            skipSpace()
            try expect(":")
            skipSpace()
            pairs.append((key, try value(depth: depth + 1)))
            skipSpace()
            guard at < bytes.count else { throw fail("unexpected end in an object") }
            if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
            try expect("}")
            return .object(pairs)
        }
    }

    mutating func array(depth: Int) throws -> ExactJSON {
        at += 1
        var items: [ExactJSON] = []
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard at < bytes.count else { throw fail("unexpected end in an array") }
            if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
            try expect("]")
            return .array(items)
        }
    }

    mutating func number() throws -> Double {
        let start = at
        while at < bytes.count, "+-0123456789.eE".utf8.contains(bytes[at]) { at += 1 }
        guard at > start, let text = String(bytes: bytes[start..<at], encoding: .utf8),
            let d = Double(text)
        else { throw fail("not a JSON value") }
        return d
    }

    mutating func hex4() throws -> UInt32 {
        guard at + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for b in bytes[at..<at + 4] {
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | digit
        }
        at += 4
        return v
    }

    /// The string's exact bytes (escapes decoded to UTF-8); invalid UTF-8 or a lone surrogate is
    /// refused, as serde_json refuses it.
    mutating func string() throws -> String {
        at += 1
        var out: [UInt8] = []
        while true {
            guard at < bytes.count else { throw fail("unterminated string") }
            let b = bytes[at]
            if b == UInt8(ascii: "\"") { at += 1; break }
            if b != UInt8(ascii: "\\") { out.append(b); at += 1; continue }
            at += 1
            guard at < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[at]
            at += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var v = try hex4()
                if (0xD800..<0xDC00).contains(v) {
                    guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u")
                    else { throw fail("lone surrogate") }
                    at += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("lone surrogate") }
                    v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(v) {
                    throw fail("lone surrogate")
                }
                out.append(contentsOf: Unicode.Scalar(v)!.utf8Bytes)
            default: throw fail("bad escape")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("string not UTF-8") }
        return s
    }
}

extension Unicode.Scalar {
    /// The scalar's UTF-8 encoding.
    var utf8Bytes: [UInt8] {
        var out: [UInt8] = []
        UTF8.encode(self) { out.append($0) }
        return out
    }
}
