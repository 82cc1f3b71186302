import Foundation

/// num2words 0.5.14's English (`Num2Word_EN`) as misaki calls it: `to='cardinal'` on integers
/// and floats, `to='ordinal'` and `to='year'` on integers. Integers are decimal digit strings
/// (misaki reads arbitrarily long ones; num2words refuses 10^306 and more with OverflowError,
/// which is `nil` here). `splitnum`, `clean` and `merge` are num2words' own, step for step.
enum Num2WordsEN {
    /// A natural number as decimal digits, most significant first, no leading zeros ("0" is [0]).
    struct Natural: Comparable {
        var digits: [UInt8]

        init(_ digits: some Sequence<UInt8>) {
            let d = Array(digits.drop { $0 == 0 })
            self.digits = d.isEmpty ? [0] : d
        }

        init(_ value: Int) { self.init(String(value).utf8.map { $0 - 48 }) }

        /// Python `int(s)` for a string of ASCII digits.
        init?(decimal s: some StringProtocol) {
            guard !s.isEmpty, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            self.init(s.utf8.map { $0 - 48 })
        }

        static func power10(_ n: Int) -> Natural { Natural([1] + [UInt8](repeating: 0, count: n)) }

        var isZero: Bool { digits == [0] }
        /// The value when it has at most 18 digits.
        var small: Int? { digits.count <= 18 ? digits.reduce(0) { $0 * 10 + Int($1) } : nil }

        static func < (a: Natural, b: Natural) -> Bool {
            a.digits.count != b.digits.count ? a.digits.count < b.digits.count : a.digits.lexicographicallyPrecedes(b.digits)
        }

        static func + (a: Natural, b: Natural) -> Natural {
            var out: [UInt8] = [], carry = 0
            var i = a.digits.count - 1, j = b.digits.count - 1
            while i >= 0 || j >= 0 || carry > 0 {
                let s = (i >= 0 ? Int(a.digits[i]) : 0) + (j >= 0 ? Int(b.digits[j]) : 0) + carry
                out.append(UInt8(s % 10))
                carry = s / 10
                i -= 1
                j -= 1
            }
            return Natural(out.reversed())
        }

        static func * (a: Natural, b: Natural) -> Natural {
            var acc = [Int](repeating: 0, count: a.digits.count + b.digits.count)
            for (i, x) in a.digits.reversed().enumerated() where x != 0 {
                for (j, y) in b.digits.reversed().enumerated() { acc[i + j] += Int(x) * Int(y) }
            }
            var carry = 0
            for k in acc.indices {
                let s = acc[k] + carry
                acc[k] = s % 10
                carry = s / 10
            }
            return Natural(acc.reversed().map(UInt8.init))
        }

        /// `divmod(self, 10**n)`.
        func divmod10(_ n: Int) -> (Natural, Natural) {
            guard digits.count > n else { return (Natural([0]), self) }
            return (Natural(digits.prefix(digits.count - n)), Natural(digits.suffix(n)))
        }
    }

    /// `self.cards`, in num2words' order: 10^303 ("centillion") down to 10^6, then the mid and
    /// low words. Keys are powers of ten (exponent) or small values.
    enum Key { case power(Int), small(Int) }

    static let cards: [(key: Key, word: String)] = {
        let lows = ["non", "oct", "sept", "sext", "quint", "quadr", "tr", "b", "m"]
        let units = ["", "un", "duo", "tre", "quattuor", "quin", "sex", "sept", "octo", "novem"]
        let tens = ["dec", "vigint", "trigint", "quadragint", "quinquagint", "sexagint", "septuagint", "octogint", "nonagint"]
        let high = ["cent"] + Array(tens.flatMap { t in units.map { $0 + t } }.reversed()) + lows
        var out: [(Key, String)] = zip(stride(from: 3 + 3 * high.count, to: 3, by: -3), high).map { (.power($0), $1 + "illion") }
        out += [(.power(3), "thousand"), (.power(2), "hundred")]
        out += [(90, "ninety"), (80, "eighty"), (70, "seventy"), (60, "sixty"), (50, "fifty"), (40, "forty"), (30, "thirty")].map { (.small($0), $1) }
        let low = [
            "twenty", "nineteen", "eighteen", "seventeen", "sixteen", "fifteen", "fourteen", "thirteen", "twelve", "eleven",
            "ten", "nine", "eight", "seven", "six", "five", "four", "three", "two", "one", "zero",
        ]
        out += low.enumerated().map { (.small(low.count - 1 - $0), $1) }
        return out
    }()

    /// `MAXVAL = 1000 * 10**303`.
    static let maxExponent = 306

    static let ords = [
        "one": "first", "two": "second", "three": "third", "four": "fourth", "five": "fifth", "six": "sixth",
        "seven": "seventh", "eight": "eighth", "nine": "ninth", "ten": "tenth", "eleven": "eleventh", "twelve": "twelfth",
    ]

    typealias Pair = (text: String, num: Natural)
    indirect enum Node {
        case pair(String, Natural)
        case list([Node])
    }

    static func splitnum(_ value: Natural) -> [Node] {
        let small = value.small
        for (key, word) in cards {
            // `if elem > value: continue`, without building 10^n.
            switch key {
            case .power(let n): if value.digits.count <= n { continue }
            case .small(let k): if let small, k > small { continue }
            }
            let elem: Natural
            switch key {
            case .power(let n): elem = .power10(n)
            case .small(let k): elem = Natural(k)
            }
            var out: [Node] = []
            let div: Natural, mod: Natural
            if value.isZero {
                (div, mod) = (Natural(1), Natural(0))
            } else if case .power(let n) = key {
                (div, mod) = value.divmod10(n)
            } else {
                // A small card is only reached below 100.
                let v = value.small!, k = elem.small!
                (div, mod) = (Natural(v / k), Natural(v % k))
            }
            if div == Natural(1) {
                out.append(.pair("one", Natural(1)))
            } else {
                // num2words' `div == value` tally branch needs elem == 1 with value > 1: never.
                out.append(.list(splitnum(div)))
            }
            out.append(.pair(word, elem))
            if !mod.isZero { out.append(.list(splitnum(mod))) }
            return out
        }
        fatalError("num2words' cards end at zero")
    }

    static func merge(_ l: Pair, _ r: Pair) -> Pair {
        let hundred = Natural(100)
        if l.num == Natural(1) && r.num < hundred { return r }
        if hundred > l.num && l.num > r.num { return ("\(l.text)-\(r.text)", l.num + r.num) }
        if l.num >= hundred && hundred > r.num { return ("\(l.text) and \(r.text)", l.num + r.num) }
        if r.num > l.num { return ("\(l.text) \(r.text)", l.num * r.num) }
        return ("\(l.text), \(r.text)", l.num + r.num)
    }

    static func clean(_ val0: [Node]) -> Node {
        var val = val0, out = val0
        while val.count != 1 {
            out = []
            if case .pair(let lt, let ln) = val[0], case .pair(let rt, let rn) = val[1] {
                let m = merge((lt, ln), (rt, rn))
                out.append(.pair(m.text, m.num))
                if val.count > 2 { out.append(.list(Array(val[2...]))) }
            } else {
                for elem in val {
                    if case .list(let items) = elem {
                        out.append(items.count == 1 ? items[0] : clean(items))
                    } else {
                        out.append(elem)
                    }
                }
            }
            val = out
        }
        return out[0]
    }

    /// `to_cardinal(int)`; nil where num2words raises OverflowError.
    static func cardinal(_ value: Natural) -> String? {
        guard value < .power10(maxExponent) else { return nil }
        guard case .pair(let words, _) = clean(splitnum(value)) else { fatalError("clean ends on a pair") }
        return words
    }

    static func cardinal(_ value: Int) -> String { cardinal(Natural(value))! }

    /// `to_ordinal(int)`.
    static func ordinal(_ value: Natural) -> String? {
        guard let card = cardinal(value) else { return nil }
        var outwords = card.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        var lastwords = outwords[outwords.count - 1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        var lastword = lastwords[lastwords.count - 1].lowercased()
        if let o = ords[lastword] {
            lastword = o
        } else {
            if lastword.hasSuffix("y") { lastword = lastword.dropLast() + "ie" }
            lastword += "th"
        }
        lastwords[lastwords.count - 1] = lastword
        outwords[outwords.count - 1] = lastwords.joined(separator: "-")
        return outwords.joined(separator: " ")
    }

    /// `to_year(int)` for 0...9999 (misaki's four-digit words).
    static func year(_ val: Int) -> String {
        let high = val / 100, low = val % 100
        if high == 0 || (high % 10 == 0 && low < 10) || high >= 100 { return cardinal(val) }
        let lowtext = low == 0 ? "hundred" : (low < 10 ? "oh-\(cardinal(low))" : cardinal(low))
        return "\(cardinal(high)) \(lowtext)"
    }

    /// `to_cardinal(float(s))` for a decimal string misaki passes (digits around one "."): an
    /// integral float reads as that integer; otherwise `to_cardinal_float`, whose precision is
    /// the digit count after the point of the float's shortest repr (`Decimal(str(value))`),
    /// both Swift and Python printing the shortest round-tripping digits. nil where Python
    /// raises.
    static func cardinalOfFloat(_ s: String) -> String? {
        guard let value = Double(s.hasSuffix(".") ? s + "0" : s), value.isFinite else { return nil }
        if value == value.rounded(.towardZero) {
            // `int(value) == value`: num2words goes on with the float through splitnum; its
            // words are the integer's while float divmod stays exact.
            guard let n = exactInteger(value) else { return nil }
            return cardinal(n)
        }
        let pre = value.rounded(.towardZero)
        let precision = fractionDigits(value)
        guard precision <= 308 else { return nil }
        let scale = Double("1e\(precision)")!
        var post = (value - pre).magnitude * scale
        let r = post.rounded(.toNearestOrEven)
        post = (r - post).magnitude < 0.01 ? r : post.rounded(.down)
        guard post < 9.0e18 else { return nil }
        var digits = String(Int(post))
        if digits.count < precision { digits = String(repeating: "0", count: precision - digits.count) + digits }
        var out = [cardinal(Natural(Int(pre)))!]
        if precision > 0 { out.append("point") }
        for c in digits.utf8.prefix(precision) { out.append(cardinal(Int(c) - 48)) }
        return out.joined(separator: " ")
    }

    /// `abs(Decimal(str(value)).as_tuple().exponent)` for a finite non-integral double.
    static func fractionDigits(_ value: Double) -> Int {
        let text = "\(value.magnitude)"  // shortest round-trip digits, like Python's repr
        var mantissa = Substring(text), exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            exponent = Int(text[text.index(after: e)...])!
        }
        var fraction = mantissa.firstIndex(of: ".").map { mantissa[mantissa.index(after: $0)...] } ?? ""
        // Decimal keeps every written digit; Swift writes "1.0e-05" where Python writes "1e-05".
        if exponent != 0 && fraction == "0" { fraction = "" }
        return abs(exponent - fraction.count)
    }

    /// The exact value of an integral double, as digits.
    static func exactInteger(_ value: Double) -> Natural? {
        let m = value.magnitude
        if m < 9.0e18 { return Natural(Int(m)) }
        let exp = Int(m.exponent) - 52
        let significand = Natural(Int(m.significandBitPattern | (1 << 52)))
        var out = significand
        let chunk = Natural(1 << 30)
        var e = exp
        while e >= 30 {
            out = out * chunk
            e -= 30
        }
        return out * Natural(1 << e)
    }
}
