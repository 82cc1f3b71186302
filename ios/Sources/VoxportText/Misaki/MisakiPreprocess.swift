/// misaki's `G2P.preprocess`: `[word](feature)` links replaced by their word, the text's
/// whitespace-split words, and each link's feature keyed by its word's index among them.
enum MisakiPreprocess {
    typealias Scalars = [UInt32]
    typealias T = PythonText

    /// A link's feature: a stress number, "/phonemes" or "#number flags".
    enum Feature: Equatable {
        case stress(Double)
        case phonemes(Scalars)
        case numFlags(Scalars)
    }

    struct Result {
        var text: Scalars
        var words: [Scalars]
        /// In insertion order, as the Python dict iterates.
        var features: [(word: Int, feature: Feature)]
    }

    /// misaki's `is_digit`: `re.match(r'^[0-9]+$', text)` (`$` also matches before a final "\n").
    static func isDigit(_ s: ArraySlice<UInt32>) -> Bool {
        var s = s
        if s.last == 0x0A { s = s.dropLast() }
        return !s.isEmpty && s.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// `LINK_REGEX = r'\[([^\]]+)\]\(([^\)]*)\)'` at `i`: (word range, feature range, end).
    /// Neither class can cross its closing bracket, so the first "]" and ")" decide the match.
    static func link(_ s: Scalars, at i: Int) -> (Range<Int>, Range<Int>, Int)? {
        guard s[i] == 0x5B, let close = s[(i + 1)...].firstIndex(of: 0x5D), close > i + 1,
            close + 1 < s.count, s[close + 1] == 0x28, let end = s[(close + 2)...].firstIndex(of: 0x29)
        else { return nil }
        return ((i + 1)..<close, (close + 2)..<end, end + 1)
    }

    static func feature(_ f: Scalars) -> Feature? {
        let signed = f.first == 0x2D || f.first == 0x2B
        if isDigit(f[(signed ? 1 : 0)...]) {
            // `int(f)`: sign, digits, the final "\n" `is_digit` let through is whitespace to int.
            var digits = f.filter { $0 >= 0x30 && $0 <= 0x39 }.reduce(0.0) { $0 * 10 + Double($1 - 0x30) }
            if f.first == 0x2D { digits = -digits }
            return .stress(digits)
        }
        if f == T.scalars("0.5") || f == T.scalars("+0.5") { return .stress(0.5) }
        if f == T.scalars("-0.5") { return .stress(-0.5) }
        if f.count > 1, f.first == 0x2F, f.last == 0x2F {
            var rest = f.dropFirst()
            while rest.last == 0x2F { rest = rest.dropLast() }
            return .phonemes([0x2F] + rest)
        }
        if f.count > 1, f.first == 0x23, f.last == 0x23 {
            var rest = f.dropFirst()
            while rest.last == 0x23 { rest = rest.dropLast() }
            return .numFlags([0x23] + rest)
        }
        return nil
    }

    static func run(_ input: Scalars) -> Result {
        let text = Array(input.drop(while: T.isSpace))
        var result: Scalars = [], words: [Scalars] = [], features: [(Int, Feature)] = []
        var lastEnd = 0, i = 0
        while i < text.count {
            guard let (word, feature, end) = link(text, at: i) else { i += 1; continue }
            result += text[lastEnd..<word.lowerBound - 1]
            words += T.split(Array(text[lastEnd..<word.lowerBound - 1]))
            if let f = Self.feature(Array(text[feature])) { features.append((words.count, f)) }
            result += text[word]
            words.append(Array(text[word]))
            lastEnd = end
            i = end
        }
        if lastEnd < text.count {
            result += text[lastEnd...]
            words += T.split(Array(text[lastEnd...]))
        }
        return Result(text: result, words: words, features: features)
    }
}
