import Foundation

/// `manifest.json` as `conversion/core/bundle.py` writes it (`Manifest.to_json`).
public struct Manifest: Decodable, Sendable {
    /// The one format this VoxportKit reads (`bundle.FORMAT`).
    public static let format = "voxport-bundle/1"
    /// The manifest's file name inside a bundle (`bundle.MANIFEST`).
    public static let fileName = "manifest.json"

    public let format: String
    public let model: String
    public let precision: String
    public let graphs: [String: GraphEntry]
    public let weightsSHA256: String?
    public let config: [String: JSONValue]
    public let voxportVersion: String?
    /// Export time stamp; informational only (nothing is keyed on it).
    public let created: String
    public let packages: [String: String?]
    public let meta: [String: JSONValue]

    /// Host files travelling with the bundle (`meta.files`): name -> sha256 of its bytes.
    public var files: [String: String] {
        var out: [String: String] = [:]
        for (name, value) in meta["files"]?.objectValue ?? [:] {
            if let digest = value.stringValue { out[name] = digest }
        }
        return out
    }

    enum CodingKeys: String, CodingKey {
        case format, model, precision, graphs, config, created, packages, meta
        case weightsSHA256 = "weights_sha256"
        case voxportVersion = "voxport_version"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(String.self, forKey: .format)
        model = try c.decode(String.self, forKey: .model)
        precision = try c.decode(String.self, forKey: .precision)
        graphs = try c.decode([String: GraphEntry].self, forKey: .graphs)
        weightsSHA256 = try c.decodeIfPresent(String.self, forKey: .weightsSHA256)
        config = try c.decodeIfPresent([String: JSONValue].self, forKey: .config) ?? [:]
        voxportVersion = try c.decodeIfPresent(String.self, forKey: .voxportVersion)
        created = try c.decodeIfPresent(String.self, forKey: .created) ?? ""
        packages = try c.decodeIfPresent([String: String?].self, forKey: .packages) ?? [:]
        meta = try c.decodeIfPresent([String: JSONValue].self, forKey: .meta) ?? [:]
    }

    /// Decode manifest bytes; `source` names the file in errors. The format is checked before
    /// anything else so a newer bundle fails with its version, not with a missing key.
    public static func decode(_ data: Data, source: String = Manifest.fileName) throws -> Manifest {
        // The same words as Python's `bundle.read_manifest_json`: not JSON, or JSON that is not
        // an object (a list, a string, ...), before any key is looked for.
        let top: Any
        do {
            top = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw VoxportError(.bundleIntegrity, "\(source) is not JSON (\(error)); re-export it")
        }
        guard top is [String: Any] else {
            throw VoxportError(
                .bundleIntegrity,
                "\(source) holds a JSON \(jsonKind(data)), not the object a manifest is; re-export it")
        }
        let probe: FormatProbe
        do {
            probe = try JSONDecoder().decode(FormatProbe.self, from: data)
        } catch {
            throw VoxportError(.bundleIntegrity, "\(source): malformed manifest (\(error)); re-export it")
        }
        guard probe.format == format else {
            let found = probe.format.map { PythonRepr.string($0) } ?? "none"
            throw VoxportError(
                .unsupportedFormat,
                "\(source): unsupported bundle format \(found); this VoxportKit reads \(format) only: "
                    + "re-export the bundle with a matching voxport, or update VoxportKit")
        }
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: data)
        } catch {
            throw VoxportError(.bundleIntegrity, "\(source): malformed manifest (\(error)); re-export it")
        }
        try manifest.checkNames(source: source)
        return manifest
    }

    /// `Manifest.check_names`: every graph name, asset and host file a plain name inside the
    /// bundle, in name order (a `../x` or `/x` would make a loader or a sideload reach out of
    /// the bundle, and its hash check would pass on whatever lies there).
    func checkNames(source: String) throws {
        for name in graphs.keys.sorted(by: Manifest.codePointOrder) {
            try Manifest.checkPlain(source, "graph name", name)
            try Manifest.checkPlain(source, "asset of graph \(PythonRepr.string(name))", graphs[name]!.asset)
        }
        for name in files.keys.sorted(by: Manifest.codePointOrder) {
            try Manifest.checkPlain(source, "file", name)
        }
    }

    /// The top-level names a bundle holds: its manifest, assets and host files.
    public var entries: Set<String> {
        Set([Manifest.fileName] + graphs.values.map(\.asset) + files.keys)
    }

    /// `bundle.is_plain_name`: one path component, not `.`, `..` or empty, no separator, no NUL.
    public static func isPlainName(_ name: String) -> Bool {
        !["", ".", ".."].contains(name) && !name.unicodeScalars.contains { "/\\\0".unicodeScalars.contains($0) }
    }

    private static func checkPlain(_ source: String, _ what: String, _ name: String) throws {
        guard isPlainName(name) else {
            throw VoxportError(
                .bundleIntegrity,
                "\(source): \(what) \(PythonRepr.string(name)) is not a plain name inside the bundle (no '/', '\\', "
                    + "'..' or absolute path): the manifest was edited; re-export the bundle")
        }
    }

    /// Python's `sorted` order for names (code points, not Swift's Unicode collation).
    static func codePointOrder(_ a: String, _ b: String) -> Bool {
        a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
    }

    /// One function's descriptor, with Python's `Manifest.function` messages.
    public func function(graph: String, function: String) throws -> FunctionEntry {
        guard let g = graphs[graph] else {
            throw VoxportError(
                .user, "no graph \(PythonRepr.string(graph)) in this bundle (has: \(PythonRepr.list(graphs.keys.sorted())))")
        }
        guard let fn = g.functions[function] else {
            throw VoxportError(
                .user,
                "graph \(PythonRepr.string(graph)) has no function \(PythonRepr.string(function)) "
                    + "(has: \(PythonRepr.list(g.functions.keys.sorted())))")
        }
        return fn
    }

    private struct FormatProbe: Decodable {
        let format: String?
    }
}

/// One `.aimodel` asset (`BundleWriter.add_graph`'s record).
public struct GraphEntry: Decodable, Sendable {
    public let asset: String
    public let precision: String
    /// `content_hash` of the asset (a folder: every file's relative path and bytes).
    public let sha256: String
    public let functions: [String: FunctionEntry]
    public let exportSeconds: Double?
    public let meta: [String: JSONValue]

    enum CodingKeys: String, CodingKey {
        case asset, precision, sha256, functions, meta
        case exportSeconds = "export_seconds"
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        asset = try c.decode(String.self, forKey: .asset)
        precision = try c.decode(String.self, forKey: .precision)
        sha256 = try c.decode(String.self, forKey: .sha256)
        functions = try c.decode([String: FunctionEntry].self, forKey: .functions)
        exportSeconds = try c.decodeIfPresent(Double.self, forKey: .exportSeconds)
        meta = try c.decodeIfPresent([String: JSONValue].self, forKey: .meta) ?? [:]
    }

    /// The graph's bucket table (`meta.buckets`, as `BucketTable.to_json` wrote it), if bucketed.
    public func bucketTable() throws -> BucketTable? {
        guard let list = meta["buckets"]?.arrayValue else { return nil }
        let buckets: [[String: Int]] = try list.map { item in
            guard let obj = item.objectValue else {
                throw VoxportError(.bundleIntegrity, "graph meta.buckets holds a non-object: \(item)")
            }
            return try obj.mapValues { v in
                guard let n = v.intValue else {
                    throw VoxportError(.bundleIntegrity, "graph meta.buckets holds a non-integer size: \(v)")
                }
                return n
            }
        }
        return try BucketTable(buckets)
    }
}

/// One entrypoint's I/O (`export.export_program`'s `io`).
public struct FunctionEntry: Decodable, Sendable {
    public let inputs: [TensorSpec]
    public let outputs: [TensorSpec]
    public let states: [TensorSpec]
    /// The static bucket this function was exported for, if any.
    public let bucket: [String: Int]?

    enum CodingKeys: String, CodingKey { case inputs, outputs, states, bucket }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        inputs = try c.decode([TensorSpec].self, forKey: .inputs)
        outputs = try c.decode([TensorSpec].self, forKey: .outputs)
        states = try c.decodeIfPresent([TensorSpec].self, forKey: .states) ?? []
        bucket = try c.decodeIfPresent([String: Int].self, forKey: .bucket)
    }
}

/// A named tensor: shape and torch dtype name (`float32`, `int32`, ...). An output whose
/// shape the exporter could not read has `shape` and `dtype` nil.
public struct TensorSpec: Decodable, Equatable, Sendable {
    public let name: String
    public let shape: [Int]?
    public let dtype: String?

    public init(name: String, shape: [Int]?, dtype: String?) {
        self.name = name
        self.shape = shape
        self.dtype = dtype
    }
}

/// Python's name for the kind of a top-level JSON value that is not an object, read off its
/// first byte (the same on every platform; NSNumber bridging tells booleans apart differently).
func jsonKind(_ data: Data) -> String {
    let first = data.first { !(" \t\r\n".utf8.contains($0)) }
    switch first {
    case UInt8(ascii: "["): return "list"
    case UInt8(ascii: "\""): return "string"
    case UInt8(ascii: "t"), UInt8(ascii: "f"): return "boolean"
    case UInt8(ascii: "n"): return "null"
    default: return "number"
    }
}
