/// The tokenizer.json pre-tokenizers this module runs exactly: ByteLevel (GPT-2's regex or
/// none), Whitespace, Split (a known regex, a literal, or "" = every scalar on its own), and a
/// Sequence of them. Each turns a piece of text into smaller pieces; empty pieces are dropped,
/// as `PreTokenizedString::split` drops them.
indirect enum PreTokenizer {
    enum Splitter {
        case pattern(SplitPattern)
        case literal([UInt32])
        case eachScalar
    }
    enum Behavior: String {
        case removed = "Removed", isolated = "Isolated", mergedWithPrevious = "MergedWithPrevious"
        case mergedWithNext = "MergedWithNext", contiguous = "Contiguous"
    }

    case byteLevel(addPrefixSpace: Bool, useRegex: Bool)
    case split(Splitter, Behavior, invert: Bool)
    case sequence([PreTokenizer])

    init?(_ json: ExactJSON?) throws {
        guard let json, !json.isNull else { return nil }
        switch json["type"]?.string {
        case "ByteLevel":
            self = .byteLevel(addPrefixSpace: json["add_prefix_space"]?.bool ?? true, useRegex: json["use_regex"]?.bool ?? true)
        case "Whitespace":
            // `\w+|[^\w\s]+`, matches kept, what lies between them removed.
            self = .split(.pattern(.whitespace), .removed, invert: true)
        case "Split":
            let pattern = json["pattern"]
            let splitter: Splitter
            if let literal = pattern?["String"]?.string {
                splitter = literal.isEmpty ? .eachScalar : .literal(literal.unicodeScalars.map(\.value))
            } else if let regex = pattern?["Regex"]?.string {
                guard let known = SplitPattern(regex: regex) else {
                    throw TokenizerError("tokenizer.json: Split regex \(regex.debugDescription) is not one this tokenizer knows")
                }
                splitter = .pattern(known)
            } else {
                throw TokenizerError("tokenizer.json: Split has no pattern")
            }
            guard let name = json["behavior"]?.string, let behavior = Behavior(rawValue: name) else {
                throw TokenizerError("tokenizer.json: Split behavior is missing or unknown")
            }
            self = .split(splitter, behavior, invert: json["invert"]?.bool ?? false)
        case "Sequence":
            self = .sequence(try (json["pretokenizers"]?.array ?? []).compactMap { try PreTokenizer($0) })
        case let other:
            throw TokenizerError("tokenizer.json: pre-tokenizer \(other ?? "?") is not supported")
        }
    }

    func apply(_ pieces: [[UInt32]], flaw: EngineFlaw) -> [[UInt32]] {
        switch self {
        case .sequence(let steps):
            return steps.reduce(pieces) { $1.apply($0, flaw: flaw) }
        case .byteLevel(let addPrefixSpace, let useRegex):
            return pieces.flatMap { piece -> [[UInt32]] in
                var piece = piece
                if addPrefixSpace && piece.first != 0x20 { piece.insert(0x20, at: 0) }
                let parts = useRegex ? Self.split(piece, .pattern(.gpt2), .isolated, invert: false, flaw: flaw) : [piece]
                return parts.map { ByteLevel.map($0[...]) }
            }
        case .split(let splitter, let behavior, let invert):
            return pieces.flatMap { Self.split($0, splitter, behavior, invert: invert, flaw: flaw) }
        }
    }

    /// `NormalizedString::split`: the text as alternating (range, is a match) segments, then
    /// joined or dropped by `behavior`.
    static func split(_ s: [UInt32], _ splitter: Splitter, _ behavior: Behavior, invert: Bool, flaw: EngineFlaw) -> [[UInt32]] {
        let units = flaw == .graphemeClusters ? TextUnits.graphemes(of: s) : .scalars
        let found: [Range<Int>]
        switch splitter {
        case .pattern(let p): found = p.matches(s, units: units)
        case .literal(let l): found = literalMatches(s, l)
        case .eachScalar:
            var cuts: [Range<Int>] = []
            var i = 0
            while i < s.count { let n = units.next(i); cuts.append(i..<n); i = n }
            found = cuts
        }
        var segments: [(range: Range<Int>, match: Bool)] = []
        var at = 0
        for m in found {
            if at < m.lowerBound { segments.append((at..<m.lowerBound, invert)) }
            segments.append((m, !invert))
            at = m.upperBound
        }
        if at < s.count { segments.append((at..<s.count, invert)) }

        // `SplitDelimiterBehavior`, each case as the Rust fold writes it.
        var out: [Range<Int>] = []
        var previousMatch = false
        switch behavior {
        case .removed:
            out = segments.filter { !$0.match }.map(\.range)
        case .isolated:
            out = segments.map(\.range)
        case .mergedWithPrevious:
            for seg in segments {
                if seg.match && !previousMatch, let last = out.last {
                    out[out.count - 1] = last.lowerBound..<seg.range.upperBound
                } else {
                    out.append(seg.range)
                }
                previousMatch = seg.match
            }
        case .mergedWithNext:
            for seg in segments.reversed() {
                if seg.match && !previousMatch, let last = out.last {
                    out[out.count - 1] = seg.range.lowerBound..<last.upperBound
                } else {
                    out.append(seg.range)
                }
                previousMatch = seg.match
            }
            out.reverse()
        case .contiguous:
            for seg in segments {
                if seg.match == previousMatch, let last = out.last {
                    out[out.count - 1] = last.lowerBound..<seg.range.upperBound
                } else {
                    out.append(seg.range)
                }
                previousMatch = seg.match
            }
        }
        return out.filter { !$0.isEmpty }.map { Array(s[$0]) }
    }

    private static func literalMatches(_ s: [UInt32], _ l: [UInt32]) -> [Range<Int>] {
        var out: [Range<Int>] = []
        var i = 0
        while i + l.count <= s.count {
            if s[i..<(i + l.count)].elementsEqual(l) {
                out.append(i..<(i + l.count))
                i += l.count
            } else {
                i += 1
            }
        }
        return out
    }
}
