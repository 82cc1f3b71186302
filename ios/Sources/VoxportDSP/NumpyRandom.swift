/// `np.random.default_rng(seed)` bit for bit: numpy's `SeedSequence` seeding a `PCG64`
/// (128-bit LCG, XSL-RR output), and `Generator.random(dtype=np.float32)`.
///
/// Hosts whose Python side draws uniforms from a seeded generator (Audio8's frame uniforms)
/// need the same draws on a device, so a seed reproduces the Python host's choices exactly.
/// Sources: numpy's `bit_generator.pyx` (SeedSequence: hashmix / mix, pool of 4 words) and
/// `pcg64.h` (set seed, step-then-output, the buffered 32-bit half). Only non-negative
/// integer seeds are supported (numpy's most common form).
public struct NumpyPCG64 {
    private var state: UInt128
    private let increment: UInt128
    private var buffered: UInt32?

    static let multiplier = (UInt128(0x2360_ED05_1FC6_5DA4) << 64) | UInt128(0x4385_DF64_9FCC_F645)

    public init(seed: UInt64) {
        let words = SeedSequence(entropy: seed).generateState(words: 8)
        func u64(_ i: Int) -> UInt64 { UInt64(words[2 * i]) | (UInt64(words[2 * i + 1]) << 32) }
        let initState = (UInt128(u64(0)) << 64) | UInt128(u64(1))
        let initSeq = (UInt128(u64(2)) << 64) | UInt128(u64(3))
        increment = (initSeq << 1) | 1
        state = 0
        step()
        state &+= initState
        step()
    }

    private mutating func step() { state = state &* Self.multiplier &+ increment }

    /// `pcg64_next64`: advance, then the XSL-RR output of the new state.
    public mutating func next64() -> UInt64 {
        step()
        let rot = UInt64(truncatingIfNeeded: state >> 122)
        let xored = UInt64(truncatingIfNeeded: state >> 64) ^ UInt64(truncatingIfNeeded: state)
        return (xored >> rot) | (xored << ((64 &- rot) & 63))
    }

    /// `pcg64_next32`: the low half of a fresh 64-bit draw, the high half kept for next time.
    public mutating func next32() -> UInt32 {
        if let b = buffered {
            buffered = nil
            return b
        }
        let v = next64()
        buffered = UInt32(truncatingIfNeeded: v >> 32)
        return UInt32(truncatingIfNeeded: v)
    }

    /// `Generator.random(n, dtype=np.float32)`: (next32 >> 8) / 2^24, in order.
    public mutating func float32s(_ count: Int) -> [Float] {
        var out = [Float](repeating: 0, count: count)
        for i in 0..<count { out[i] = Float(next32() >> 8) * (1.0 / 16_777_216.0) }
        return out
    }
}

/// numpy's `SeedSequence(entropy)` for one non-negative integer, no spawn key, pool size 4.
struct SeedSequence {
    static let initA: UInt32 = 0x43b0_d7e5, multA: UInt32 = 0x931e_8875
    static let initB: UInt32 = 0x8b51_f9dd, multB: UInt32 = 0x58f3_8ded
    static let mixL: UInt32 = 0xca01_f9dd, mixR: UInt32 = 0x4973_f715
    private(set) var pool = [UInt32](repeating: 0, count: 4)

    init(entropy: UInt64) {
        // `_coerce_to_uint32_array`: little-endian 32-bit words, at least one.
        var words: [UInt32] = [UInt32(truncatingIfNeeded: entropy)]
        if entropy >> 32 != 0 { words.append(UInt32(truncatingIfNeeded: entropy >> 32)) }
        var hashConst = Self.initA
        func hashmix(_ value: UInt32) -> UInt32 {
            var v = value ^ hashConst
            hashConst = hashConst &* Self.multA
            v = v &* hashConst
            return v ^ (v >> 16)
        }
        func mix(_ x: UInt32, _ y: UInt32) -> UInt32 {
            let r = (Self.mixL &* x) &- (Self.mixR &* y)
            return r ^ (r >> 16)
        }
        for i in 0..<pool.count { pool[i] = hashmix(i < words.count ? words[i] : 0) }
        for src in 0..<pool.count {
            for dst in 0..<pool.count where src != dst { pool[dst] = mix(pool[dst], hashmix(pool[src])) }
        }
        for src in pool.count..<max(pool.count, words.count) {
            for dst in 0..<pool.count { pool[dst] = mix(pool[dst], hashmix(words[src])) }
        }
    }

    /// `generate_state(n, np.uint32)`.
    func generateState(words n: Int) -> [UInt32] {
        var hashConst = Self.initB
        return (0..<n).map { i in
            var v = pool[i % pool.count] ^ hashConst
            hashConst = hashConst &* Self.multB
            v = v &* hashConst
            return v ^ (v >> 16)
        }
    }
}
