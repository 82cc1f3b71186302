extension EnglishNumberWords {
    /// A natural number of any size, held as base-1000 digits (least significant first, no
    /// leading zero group): the number's groups of three are the groups it is named by.
    struct Natural: Equatable, Comparable {
        private(set) var groups: [Int]

        /// A string of ASCII decimal digits (leading zeros allowed, as Python's `int`); nil for
        /// an empty string or any other character.
        init?(decimal: some StringProtocol) {
            let digits = Array(decimal.utf8)
            guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            var groups: [Int] = []
            var end = digits.count
            while end > 0 {
                let start = Swift.max(0, end - 3)
                groups.append(digits[start..<end].reduce(0) { $0 * 10 + Int($1 - 0x30) })
                end = start
            }
            self.groups = groups
            trim()
        }

        init(_ value: UInt) {
            groups = []
            var v = value
            while v > 0 {
                groups.append(Int(v % 1000))
                v /= 1000
            }
        }

        init(_ value: Int) {
            precondition(value >= 0, "a Natural is not negative")
            self.init(UInt(value))
        }

        /// 10^n.
        static func power10(_ n: Int) -> Natural {
            var p = Natural(UInt([1, 10, 100][n % 3]))
            p.groups.insert(contentsOf: repeatElement(0, count: n / 3), at: 0)
            return p
        }

        var isZero: Bool { groups.isEmpty }

        /// self × k for 0 < k < 2^40 (so a group times k stays well inside an Int).
        func times(_ k: Int) -> Natural {
            var out = self
            var carry = 0
            for i in out.groups.indices {
                let v = out.groups[i] * k + carry
                out.groups[i] = v % 1000
                carry = v / 1000
            }
            while carry > 0 {
                out.groups.append(carry % 1000)
                carry /= 1000
            }
            return out
        }

        static func < (a: Natural, b: Natural) -> Bool {
            if a.groups.count != b.groups.count { return a.groups.count < b.groups.count }
            for (x, y) in zip(a.groups.reversed(), b.groups.reversed()) where x != y { return x < y }
            return false
        }

        private mutating func trim() {
            while groups.last == 0 { groups.removeLast() }
        }
    }
}
