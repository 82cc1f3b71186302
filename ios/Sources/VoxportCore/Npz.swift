import Foundation

/// An `.npz` written by `np.savez`: arrays by name (the member name without `.npy`, as
/// `np.load(...).files` lists them).
public struct NpzArchive: Sendable {
    public let arrays: [String: NpyArray]

    /// Names in sorted order.
    public var names: [String] { arrays.keys.sorted() }

    public subscript(name: String) -> NpyArray? { arrays[name] }

    /// The array called `name`, or an error listing what the archive holds.
    public func array(_ name: String) throws -> NpyArray {
        guard let a = arrays[name] else {
            throw VoxportError(.user, "no array \(PythonRepr.string(name)) in this npz (has: \(PythonRepr.list(names)))")
        }
        return a
    }

    public static func load(_ url: URL) throws -> NpzArchive {
        try parse(try FileIO.read(url), source: url.path)
    }

    public static func parse(_ data: Data, source: String = "npz") throws -> NpzArchive {
        var arrays: [String: NpyArray] = [:]
        for m in try StoredZip(data, source: source).members {
            let key = m.name.hasSuffix(".npy") ? String(m.name.dropLast(4)) : m.name
            arrays[key] = try Npy.parse(m.data, source: "\(source):\(m.name)")
        }
        return NpzArchive(arrays: arrays)
    }
}
