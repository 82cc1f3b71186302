import Foundation

/// English number words as misaki reads them (its numbers come from num2words 0.5.14's English,
/// an LGPL package this app does not ship): written from the usual British short-scale naming
/// and checked against num2words' outputs as a black box (`number_words_case.py`). Conventions:
/// "and" inside a hundred ("one hundred and five") and before a last group under a hundred
/// ("one million and five"), ", " between other groups, hyphenated tens ("forty-two"), names up
/// to the centillion (10^303); 10^306 and beyond is where num2words raises (nil here).
enum EnglishNumberWords {
    static let units = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    ]
    static let tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    /// The name of 1000^i for i in 1...101: thousand, million ... nonillion, then the Latin
    /// tens (decillion, vigintillion ... nonagintillion) each with the unit prefixes
    /// (undecillion, duodecillion ...), then centillion.
    static let scaleNames: [String] = {
        let first = [
            "thousand", "million", "billion", "trillion", "quadrillion", "quintillion", "sextillion", "septillion", "octillion",
            "nonillion",
        ]
        let prefixes = ["", "un", "duo", "tre", "quattuor", "quin", "sex", "sept", "octo", "novem"]
        let latinTens = ["dec", "vigint", "trigint", "quadragint", "quinquagint", "sexagint", "septuagint", "octogint", "nonagint"]
        return [""] + first + latinTens.flatMap { t in prefixes.map { $0 + t + "illion" } } + ["centillion"]
    }()

    /// Groups of three digits beyond this many have no name (num2words: OverflowError).
    static var maxGroups: Int { scaleNames.count }

    /// 0 ..< 1000: "seven", "forty-two", "three hundred", "three hundred and six".
    static func belowThousand(_ n: Int) -> String {
        let (hundreds, rest) = n.quotientAndRemainder(dividingBy: 100)
        let restWords: String
        if rest < 20 {
            restWords = units[rest]
        } else {
            let (t, u) = rest.quotientAndRemainder(dividingBy: 10)
            restWords = u == 0 ? tens[t] : tens[t] + "-" + units[u]
        }
        if hundreds == 0 { return restWords }
        return units[hundreds] + " hundred" + (rest == 0 ? "" : " and " + restWords)
    }

    /// The words for a list of (scale index, count) parts, most significant first, zero counts
    /// left out. A count is normally below 1000; the float reading can carry 1000 into a count
    /// ("one thousand octovigintillion"), worded whole.
    static func joinParts(_ parts: [(scale: Int, count: Int)]) -> String {
        if parts.isEmpty { return "zero" }
        var out = ""
        for (k, part) in parts.enumerated() {
            if k > 0 { out += part.scale == 0 && part.count < 100 ? " and " : ", " }
            out += part.count < 1000 ? belowThousand(part.count) : cardinal(part.count)
            if part.scale > 0 { out += " " + scaleNames[part.scale] }
        }
        return out
    }

    /// `num2words(n)`; nil from 10^306 on.
    static func cardinal(_ n: Natural) -> String? {
        guard n.groups.count <= maxGroups else { return nil }
        return joinParts(n.groups.enumerated().reversed().filter { $0.element != 0 }.map { (scale: $0.offset, count: $0.element) })
    }

    /// `num2words(n)` for a machine integer ("minus" before a negative one).
    static func cardinal(_ n: Int) -> String {
        if n < 0 { return "minus " + cardinal(Natural(n.magnitude))! }
        return cardinal(Natural(UInt(n)))!
    }

    /// The last word's ordinal: first, second, third, fifth, eighth, ninth, twelfth; "-y"
    /// becomes "-ieth"; anything else takes "th".
    static let irregularOrdinals = [
        "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth", "twelve": "twelfth",
    ]

    /// `num2words(n, to='ordinal')`: the cardinal with its last word (after a space or a
    /// hyphen) made ordinal; nil from 10^306 on.
    static func ordinal(_ n: Natural) -> String? {
        guard let words = cardinal(n) else { return nil }
        let start = words.lastIndex { $0 == " " || $0 == "-" }.map(words.index(after:)) ?? words.startIndex
        let last = String(words[start...])
        let ord: String
        if let irregular = irregularOrdinals[last] {
            ord = irregular
        } else if last.hasSuffix("y") {
            ord = last.dropLast() + "ieth"
        } else {
            ord = last + "th"
        }
        return words[..<start] + ord
    }

    /// `num2words(n, to='year')`: four-digit years by hundreds ("nineteen oh-five", "eleven
    /// hundred", "twenty ten"), but the cardinal for a round thousand's first nine
    /// ("two thousand and five"), below 100 and from 10000 on; "BC" after a negative year.
    static func year(_ n: Int) -> String {
        if n < 0 { return year(-n) + " BC" }
        let (century, rest) = n.quotientAndRemainder(dividingBy: 100)
        if century == 0 || n >= 10_000 || (century % 10 == 0 && rest < 10) { return cardinal(n) }
        let tail = rest == 0 ? " hundred" : rest < 10 ? " oh-" + units[rest] : " " + belowThousand(rest)
        return belowThousand(century) + tail
    }
}
