/// spaCy's tok2vec (`spacy.Tok2Vec.v2`: MultiHashEmbed.v2 + MaxoutWindowEncoder.v2) and the
/// tagger's output layer, as thinc computes them in float32 for one sentence. The arithmetic
/// is in `TaggerMath`'s pointer kernels.
extension TaggerWeights {
    /// MultiHashEmbed: each attribute's id hashed into four rows of its table (summed, as
    /// thinc's `gather_add`), the tables concatenated, then Maxout + LayerNorm. n x width.
    func embed(_ ids: [[UInt64]]) -> [Float] {
        var concat = [Float](repeating: 0, count: width * tables.count)
        var out = [Float](repeating: 0, count: ids.count * width)
        for (t, tokenIDs) in ids.enumerated() {
            concat.withUnsafeMutableBufferPointer { c in
                c.update(repeating: 0)
                for (k, table) in tables.enumerated() {
                    let (a, b, d, e) = SpacyHashes.thinc(tokenIDs[k], seed: table.seed)
                    table.E.withUnsafeBufferPointer { E in
                        for key in [a, b, d, e] {
                            TaggerMath.add(E.baseAddress! + Int(key % UInt32(table.rows)) * width, into: c.baseAddress! + k * width, width)
                        }
                    }
                }
            }
            out.withUnsafeMutableBufferPointer { y in mixer.apply(concat, into: y.baseAddress! + t * width, eps: eps) }
        }
        return out
    }

    /// MaxoutWindowEncoder: `with_array(pad=depth*window)` puts `pad` zero rows before and after
    /// the sentence, then each layer is X + Maxout+LayerNorm([X[i-w] .. X[i+w]]) over every row,
    /// pad rows included (zeros beyond the padded array). n x width, the pad rows dropped.
    func encode(_ embedded: [Float]) -> [Float] {
        let n = embedded.count / width
        let rows = n + 2 * pad
        // Zero rows beyond the padded array too, so every window is a plain slice.
        var X = [Float](repeating: 0, count: (rows + 2 * window) * width)
        X.replaceSubrange(((pad + window) * width)..<((pad + window + n) * width), with: embedded)
        var delta = [Float](repeating: 0, count: rows * width)
        for layer in encoder {
            X.withUnsafeBufferPointer { x in
                delta.withUnsafeMutableBufferPointer { y in
                    for i in 0..<rows { layer.apply(x.baseAddress! + i * width, into: y.baseAddress! + i * width, eps: eps) }
                }
            }
            X.withUnsafeMutableBufferPointer { x in
                delta.withUnsafeBufferPointer { d in TaggerMath.add(d.baseAddress!, into: x.baseAddress! + window * width, rows * width) }
            }
        }
        return Array(X[((pad + window) * width)..<((pad + window + n) * width)])
    }

    /// The tagger's Softmax_v2 before normalising (spaCy predicts with normalize=False, and
    /// the argmax is the same): one score per label per token. n x labels.
    func scores(_ encoded: [Float]) -> [Float] {
        let n = encoded.count / width
        var out = [Float](repeating: 0, count: n * labels.count)
        encoded.withUnsafeBufferPointer { x in
            outputW.withUnsafeBufferPointer { w in
                outputB.withUnsafeBufferPointer { b in
                    out.withUnsafeMutableBufferPointer { y in
                        TaggerMath.affine(w.baseAddress!, b.baseAddress!, x.baseAddress!, y.baseAddress!, rows: n, nO: labels.count, nI: width)
                    }
                }
            }
        }
        return out
    }
}

extension TaggerWeights.MaxoutNorm {
    /// thinc Maxout then LayerNorm on one row of nI inputs.
    func apply(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, eps: Float) {
        W.withUnsafeBufferPointer { w in
            b.withUnsafeBufferPointer { b in
                G.withUnsafeBufferPointer { g in
                    beta.withUnsafeBufferPointer { beta in
                        TaggerMath.maxoutNorm(
                            w.baseAddress!, b.baseAddress!, g.baseAddress!, beta.baseAddress!, x, y, nO: nO, nP: nP, nI: nI, eps: eps)
                    }
                }
            }
        }
    }
}

/// The kernels, over raw pointers (array subscripts cost a call each in a debug build).
enum TaggerMath {
    /// Sum of a[i] * b[i]. A release build sums eight lanes at a time (SIMD8); a debug build
    /// (the tests') keeps four scalar running sums, since unoptimised SIMD types cost ten times
    /// more than scalar code there (0.7 s a sentence instead of 0.07 s). The two orders differ
    /// in float32 rounding only; the tests compare both builds' scores with thinc's.
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
        var i = 0
        #if DEBUG
            var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
            while i + 4 <= n {
                s0 += a[i] * b[i]
                s1 += a[i + 1] * b[i + 1]
                s2 += a[i + 2] * b[i + 2]
                s3 += a[i + 3] * b[i + 3]
                i += 4
            }
            var s = (s0 + s1) + (s2 + s3)
        #else
            var acc = SIMD8<Float>()
            let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
            while i + 8 <= n {
                acc += ra.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self) * rb.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                i += 8
            }
            var s = acc.sum()
        #endif
        while i < n {
            s += a[i] * b[i]
            i += 1
        }
        return s
    }

    /// y[i] += x[i].
    static func add(_ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, _ n: Int) {
        for i in 0..<n { y[i] += x[i] }
    }

    /// y = x @ W.T + b for each of `rows` rows (W: nO x nI).
    static func affine(
        _ W: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>,
        rows: Int, nO: Int, nI: Int
    ) {
        for t in 0..<rows {
            for o in 0..<nO { y[t * nO + o] = dot(W + o * nI, x + t * nI, nI) + b[o] }
        }
    }

    /// thinc Maxout (x @ W.T + b, W: nO x nP x nI; the best of nP pieces per output), then
    /// LayerNorm: (y - mean) * (var + eps)^-0.5 * G + beta, var the population variance.
    static func maxoutNorm(
        _ W: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ G: UnsafePointer<Float>, _ beta: UnsafePointer<Float>,
        _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, nO: Int, nP: Int, nI: Int, eps: Float
    ) {
        for o in 0..<nO {
            var best = -Float.infinity
            for p in 0..<nP {
                let r = o * nP + p
                let v = dot(W + r * nI, x, nI) + b[r]
                if v > best { best = v }
            }
            y[o] = best
        }
        var sum = 0.0
        for o in 0..<nO { sum += Double(y[o]) }
        let mean = sum / Double(nO)
        var squares = 0.0
        for o in 0..<nO { squares += (Double(y[o]) - mean) * (Double(y[o]) - mean) }
        let mu = Float(mean)
        let scale = 1 / (Float(squares / Double(nO)) + eps).squareRoot()
        for o in 0..<nO { y[o] = (y[o] - mu) * scale * G[o] + beta[o] }
    }
}
