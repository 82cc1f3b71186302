/// Python `repr` for the few shapes error messages print, so Swift messages read exactly like
/// the Python ones they mirror (e.g. BucketOverflowError's `(buckets: ['T128', 'T256'])`).
public enum PythonRepr {
    public static func string(_ s: String) -> String {
        // Python picks single quotes unless the text has a ' and no ".
        let quote: Character = (s.contains("'") && !s.contains("\"")) ? "\"" : "'"
        var out = String(quote)
        for ch in s {
            switch ch {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case quote: out += "\\\(quote)"
            default: out.append(ch)
            }
        }
        out.append(quote)
        return out
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
