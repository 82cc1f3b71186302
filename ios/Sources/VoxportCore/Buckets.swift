/// Static buckets, as `conversion/core/host/buckets.py` picks them: the smallest bucket (by volume,
/// then by sizes in dimension-name order) holding every needed size. Messages are Python's.
public struct Bucket: Hashable, Sendable, CustomStringConvertible {
    public let sizes: [String: Int]

    public init(_ sizes: [String: Int]) { self.sizes = sizes }

    public subscript(dim: String) -> Int? { sizes[dim] }

    /// A name fit for an entrypoint: `T128_L512` style, dimensions in name order.
    public var label: String {
        sizes.keys.sorted(by: codePointPrecedes).map { "\($0)\(sizes[$0]!)" }.joined(separator: "_")
    }

    /// Product of the sizes (0 for an empty bucket, like Python's).
    public var volume: Int { sizes.isEmpty ? 0 : sizes.values.reduce(1, *) }

    public var description: String { label }
}

public struct BucketTable: Sendable {
    /// Dimension names, sorted.
    public let dims: [String]
    /// Buckets, smallest first (the order `select` tries them).
    public let buckets: [Bucket]

    public init(_ buckets: [[String: Int]]) throws {
        guard !buckets.isEmpty else { throw VoxportError(.user, "a bucket table needs at least one bucket") }
        let dimSets = Set(buckets.map { $0.keys.sorted(by: codePointPrecedes) })
        guard dimSets.count == 1, let dims = dimSets.first else {
            let shown = dimSets.sorted { $0.lexicographicallyPrecedes($1, by: codePointPrecedes) }
            throw VoxportError(
                .user,
                "buckets must share dimension names, got [\(shown.map(PythonRepr.tuple).joined(separator: ", "))]")
        }
        self.dims = dims
        func key(_ b: Bucket) -> [Int] { [b.volume] + dims.map { b.sizes[$0]! } }
        self.buckets = buckets.map(Bucket.init).sorted { key($0).lexicographicallyPrecedes(key($1)) }
    }

    public static func oneDim(_ name: String, sizes: [Int]) throws -> BucketTable {
        try BucketTable(sizes.map { [name: $0] })
    }

    /// The largest size per dimension.
    public var limits: [String: Int] {
        var out: [String: Int] = [:]
        for d in dims { out[d] = buckets.map { $0.sizes[d]! }.max()! }
        return out
    }

    /// `BucketTable.select(**needs)`; `needs` in the caller's order, which is the order the
    /// error messages list them in (Python keeps keyword order).
    public func select(_ needs: [(String, Int)]) throws -> Bucket {
        let names = needs.map(\.0)
        if Set(names) != Set(dims) || Set(names).count != names.count {
            throw VoxportError(
                .user,
                "bucket needs sizes for \(PythonRepr.list(dims)), got \(PythonRepr.list(names.sorted(by: codePointPrecedes)))")
        }
        for (d, n) in needs where n < 1 {
            throw VoxportError(.user, "\(d) = \(n): nothing to run (a length must be at least 1)")
        }
        let want = Dictionary(uniqueKeysWithValues: needs)
        if let fit = buckets.first(where: { b in dims.allSatisfy { want[$0]! <= b.sizes[$0]! } }) {
            return fit
        }
        let lim = limits
        let over = needs.filter { $0.1 > lim[$0.0]! }
        let detail = over.isEmpty
            ? "no single bucket holds \(PythonRepr.dict(needs))"
            : over.map { "\($0.0) = \($0.1) > \(lim[$0.0]!)" }.joined(separator: ", ")
        throw VoxportError(
            .bucketOverflow,
            "input too long for the largest bucket (\(detail)); split the input "
                + "(buckets: \(PythonRepr.list(buckets.map(\.label))))")
    }

    /// `select` with the needs in dimension-name order.
    public func select(_ needs: [String: Int]) throws -> Bucket {
        try select(needs.sorted { codePointPrecedes($0.key, $1.key) }.map { ($0.key, $0.value) })
    }
}

/// Python's string order (by code point), not Swift's (Unicode canonical) one.
func codePointPrecedes(_ a: String, _ b: String) -> Bool {
    a.unicodeScalars.lazy.map(\.value).lexicographicallyPrecedes(b.unicodeScalars.lazy.map(\.value))
}
