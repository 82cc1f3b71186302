/// Python `repr` for the few shapes error messages print, so Swift messages read exactly like
/// the Python ones they mirror (e.g. BucketOverflowError's `(buckets: ['T128', 'T256'])`).
public enum PythonRepr {
    public static func string(_ s: String) -> String {
        // Python picks single quotes unless the text has a ' and no ". Scalars, not Characters:
        // a quote followed by a combining mark is still a quote Python escapes.
        let quote: Unicode.Scalar = (s.contains("'") && !s.contains("\"")) ? "\"" : "'"
        var out = String(quote)
        for ch in s.unicodeScalars {
            switch ch {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case quote: out += "\\" + String(quote)
            default: out.unicodeScalars.append(ch)
            }
        }
        out.unicodeScalars.append(quote)
        return out
    }

    /// Four or more upper-case hex digits, as Python's `f"U+{ord(c):04X}"` prints a code point.
    public static func hex4(_ v: UInt32) -> String {
        let h = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }

    public static func list(_ items: [String]) -> String {
        "[" + items.map(string).joined(separator: ", ") + "]"
    }

    static func tuple(_ items: [String]) -> String {
        items.count == 1 ? "(\(string(items[0])),)" : "(" + items.map(string).joined(separator: ", ") + ")"
    }

    /// A dict of str -> int in the given (insertion) order.
    static func dict(_ pairs: [(String, Int)]) -> String {
        "{" + pairs.map { "\(string($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }
}
