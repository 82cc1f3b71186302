/// The two hashes spaCy's tagger runs on every token.
enum SpacyHashes {
    /// spaCy's string hash (`spacy.strings.hash_string`) is MurmurHash64A (the `murmurhash`
    /// package's `hash64`) of the UTF-8 bytes with seed 1.
    static func murmurHash64A(_ bytes: [UInt8], seed: UInt64) -> UInt64 {
        let m: UInt64 = 0xc6a4_a793_5bd1_e995
        let r: UInt64 = 47
        var h = seed ^ (UInt64(bytes.count) &* m)
        let blocks = bytes.count / 8
        for b in 0..<blocks {
            var k: UInt64 = 0
            for j in 0..<8 { k |= UInt64(bytes[b * 8 + j]) << UInt64(8 * j) }
            k &*= m
            k ^= k >> r
            k &*= m
            h ^= k
            h &*= m
        }
        let tail = blocks * 8
        let rest = bytes.count & 7
        if rest > 0 {
            for j in (0..<rest).reversed() { h ^= UInt64(bytes[tail + j]) << UInt64(8 * j) }
            h &*= m
        }
        h ^= h >> r
        h &*= m
        h ^= h >> r
        return h
    }

    /// thinc's `NumpyOps.hash` for one id (`MurmurHash3_x86_128_uint64` in numpy_ops.pyx, a
    /// 64-bit-lane MurmurHash3 of the 8-byte key): four 32-bit keys, low half of h1 first.
    static func thinc(_ id: UInt64, seed: UInt32) -> (UInt32, UInt32, UInt32, UInt32) {
        var h1 = id
        h1 &*= 0x87c3_7b91_1142_53d5
        h1 = (h1 << 31) | (h1 >> 33)
        h1 &*= 0x4cf5_ad43_2745_937f
        h1 ^= UInt64(seed)
        h1 ^= 8
        var h2 = UInt64(seed)
        h2 ^= 8
        h1 &+= h2
        h2 &+= h1
        h1 = fmix(h1)
        h2 = fmix(h2)
        h1 &+= h2
        h2 &+= h1
        return (UInt32(truncatingIfNeeded: h1), UInt32(truncatingIfNeeded: h1 >> 32),
                UInt32(truncatingIfNeeded: h2), UInt32(truncatingIfNeeded: h2 >> 32))
    }

    private static func fmix(_ k: UInt64) -> UInt64 {
        var k = k
        k ^= k >> 33
        k &*= 0xff51_afd7_ed55_8ccd
        k ^= k >> 33
        k &*= 0xc4ce_b9fe_1a85_ec53
        k ^= k >> 33
        return k
    }
}
