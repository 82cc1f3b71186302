extension EnglishNumberWords {
    /// `num2words(float(text))` for a text of decimal digits with at most one ".": nil where
    /// Python raises (nothing to read, beyond the float range, 10^306 and beyond, or a fraction
    /// needing 309+ places). num2words reads a float by its own arithmetic, mirrored here in
    /// `Double`:
    /// - the whole part is split by floating-point `divmod` by the nearest double to 10^(3k),
    ///   k the largest with 10^(3k) <= x; past 2^53 the groups are not those of the exact
    ///   integer (1e305 ends "... eight hundred and fifty-six ...", not int(1e305)'s digits);
    /// - the places after "point" are as many as the shortest repr of x has; the fraction
    ///   times 10^places is rounded (half to even) when within 0.01 of a whole number, cut
    ///   down otherwise (33.333333333333336 reads "... three five"), and zero-padded; an exact
    ///   zero fraction says no "point".
    static func cardinalOfFloat(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(where: { $0 != 0x2E }), bytes.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }),
            bytes.filter({ $0 == 0x2E }).count <= 1, let x = Double(text), x.isFinite, !atLeastPowerOf10(x, 306)
        else { return nil }
        guard var words = wholePartWords(x.rounded(.towardZero)) else { return nil }
        let fraction = x - x.rounded(.towardZero)
        if fraction == 0 { return words }
        let places = reprPlaces(x)
        guard places <= 308 else { return nil }
        let scaled = fraction * power10Double(places)
        let nearest = scaled.rounded(.toNearestOrEven)
        let value = abs(nearest - scaled) < 0.01 ? nearest : scaled.rounded(.towardZero)
        var digits = exactInteger(value).decimal
        if digits.count < places { digits = String(repeating: "0", count: places - digits.count) + digits }
        words += " point " + digits.map { units[Int($0.asciiValue! - 0x30)] }.joined(separator: " ")
        return words
    }

    /// The whole part (an integral double) in groups by float `divmod`.
    static func wholePartWords(_ whole: Double) -> String? {
        var rest = whole
        var parts: [(scale: Int, count: Int)] = []
        while rest >= 1000 {
            var scale = 1
            while atLeastPowerOf10(rest, 3 * (scale + 1)) { scale += 1 }
            let (count, remainder) = pythonDivmod(rest, power10Double(3 * scale))
            // The nearest double above 10^m leaves no double in between: a count is at least 1.
            guard count >= 1 else { return nil }
            parts.append((scale, Int(count)))
            rest = remainder
        }
        parts.append((0, Int(rest)))
        return joinParts(parts.filter { $0.count != 0 })
    }

    /// Python's `divmod` on two positive floats.
    static func pythonDivmod(_ v: Double, _ w: Double) -> (Double, Double) {
        let mod = v.truncatingRemainder(dividingBy: w)
        let div = (v - mod) / w
        var floorDiv = div.rounded(.down)
        if div - floorDiv > 0.5 { floorDiv += 1 }
        return (floorDiv, mod)
    }

    /// The double nearest 10^n (as Python's `float(10**n)`).
    static func power10Double(_ n: Int) -> Double { Double("1e\(n)")! }

    /// x >= 10^n exactly (Python compares a float with an int exactly).
    static func atLeastPowerOf10(_ x: Double, _ n: Int) -> Bool {
        let p = power10Double(n)
        if x != p { return x > p }
        return !(exactInteger(p) < Natural.power10(n))
    }

    /// The exact value of a non-negative integral double.
    static func exactInteger(_ d: Double) -> Natural {
        if d < 0x1p53 { return Natural(UInt(d)) }
        var n = Natural(UInt(d.significandBitPattern | (1 << 52)))
        var shift = Int(d.exponent) - 52
        while shift > 0 {
            let step = min(shift, 30)
            n = n.times(1 << step)
            shift -= step
        }
        return n
    }

    /// How many places after the point the shortest round-trip repr of x has (Python's repr
    /// and Swift's description both print the shortest digits that read back as x).
    static func reprPlaces(_ x: Double) -> Int {
        let text = x.description
        let parts = text.split(separator: "e")
        let exponent = parts.count > 1 ? Int(parts[1])! : 0
        let mantissa = parts[0]
        let fractionDigits = mantissa.firstIndex(of: ".").map { mantissa.distance(from: $0, to: mantissa.endIndex) - 1 } ?? 0
        return max(0, fractionDigits - exponent)
    }
}

extension EnglishNumberWords.Natural {
    /// Decimal digits, no leading zeros ("0" for zero).
    var decimal: String {
        guard let top = groups.last else { return "0" }
        return String(top) + groups.dropLast().reversed().map { g in String(1000 + g).dropFirst() }.joined()
    }
}
