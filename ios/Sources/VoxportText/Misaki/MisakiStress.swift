/// misaki's stress marks and `apply_stress`, over phoneme scalars.
enum MisakiStress {
    static let primary: UInt32 = 0x2C8  // ˈ
    static let secondary: UInt32 = 0x2CC  // ˌ
    /// misaki's VOWELS: "AIOQWYaiuæɑɒɔəɛɜɪʊʌᵻ".
    static let vowels: Set<UInt32> = Set(PythonText.scalars("AIOQWYaiuæɑɒɔəɛɜɪʊʌᵻ"))

    static func isStress(_ c: UInt32) -> Bool { c == primary || c == secondary }

    /// `apply_stress(ps, stress)` for a phoneme string misaki has (never None where it calls
    /// this with a stress).
    static func apply(_ ps: [UInt32], _ stress: Double?) -> [UInt32] {
        guard let stress else { return ps }
        let hasPrimary = ps.contains(primary), hasSecondary = ps.contains(secondary)
        if stress < -1 {
            return ps.filter { !isStress($0) }
        } else if stress == -1 || ((stress == 0 || stress == -0.5) && hasPrimary) {
            return ps.compactMap { $0 == secondary ? nil : ($0 == primary ? secondary : $0) }
        } else if (stress == 0 || stress == 0.5 || stress == 1) && !hasPrimary && !hasSecondary {
            return restress(ps, secondary)
        } else if stress >= 1 && !hasPrimary && hasSecondary {
            return ps.map { $0 == secondary ? primary : $0 }
        } else if stress > 1 && !hasPrimary && !hasSecondary {
            return restress(ps, primary)
        }
        return ps
    }

    /// `restress(mark + ps)`: the mark moves to just before the first vowel; no vowel, no mark.
    private static func restress(_ ps: [UInt32], _ mark: UInt32) -> [UInt32] {
        guard let v = ps.firstIndex(where: vowels.contains) else { return ps }
        var out = ps
        out.insert(mark, at: v)
        return out
    }
}
