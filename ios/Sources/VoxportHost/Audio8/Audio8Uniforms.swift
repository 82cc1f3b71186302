import VoxportDSP

/// The uniforms one `frame` call draws with: `slow` [2, 4097] (the normal and the RAS draw)
/// and `fast` [9, 4096] (codebooks 1..9). They are graph inputs, so the draws are the host's.
public protocol Audio8Uniforms {
    mutating func next(step: Int) -> (slow: [Float], fast: [Float])
}

/// `reference.seeded_uniforms(seed)`: one numpy generator per piece, u_slow then u_fast per
/// step, floored at float32's smallest normal (so -log u stays finite).
public struct SeededUniforms: Audio8Uniforms {
    var rng: NumpyPCG64
    let slowCount: Int, fastCount: Int

    public init(seed: UInt64, semanticCount: Int, codebookSize: Int, fastBooks: Int) {
        rng = NumpyPCG64(seed: seed)
        slowCount = 2 * (semanticCount + 1)
        fastCount = fastBooks * codebookSize
    }

    public mutating func next(step: Int) -> (slow: [Float], fast: [Float]) {
        let tiny = Float.leastNormalMagnitude
        return (rng.float32s(slowCount).map { max($0, tiny) }, rng.float32s(fastCount).map { max($0, tiny) })
    }
}
