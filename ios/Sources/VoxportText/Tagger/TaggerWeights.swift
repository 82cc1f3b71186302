import Foundation

/// A tagger folder this module cannot read (missing file, wrong size, unknown attribute): one
/// line naming the problem and the fix.
public struct TaggerError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The folder `conversion.kokoro.tagger.write_tagger` writes: `tagger.json` and one raw
/// little-endian float32 file per array.
struct TaggerWeights: Sendable {
    struct Table: Sendable {
        let attribute: LexemeFeatures.Attribute
        let rows: Int
        let seed: UInt32
        let E: [Float]  // rows x width
    }

    /// thinc `Maxout(normalize=True)`: W (nO, nP, nI), b (nO, nP), then LayerNorm (G, beta).
    struct MaxoutNorm: Sendable {
        let W: [Float]
        let b: [Float]
        let G: [Float]
        let beta: [Float]
        let nO: Int
        let nP: Int
        let nI: Int
    }

    let width: Int
    let tables: [Table]
    let mixer: MaxoutNorm
    let encoder: [MaxoutNorm]
    let window: Int
    let pad: Int
    let eps: Float
    let outputW: [Float]  // labels x width
    let outputB: [Float]
    let labels: [String]
    let normTables: [[UInt64: String]]
    let strings: SpacyStringIDs

    static let format = "voxport-tagger/1"

    /// Little-endian float32 bytes.
    static func floats(_ bytes: Data) -> [Float] {
        bytes.withUnsafeBytes { raw in
            (0..<(bytes.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }

    init(folder: URL) throws {
        let jsonURL = folder.appendingPathComponent("tagger.json")
        guard let data = FileManager.default.contents(atPath: jsonURL.path) else {
            throw TaggerError("no \(jsonURL.path): write the tagger folder with conversion.kokoro.tagger.write_tagger")
        }
        let json = try ExactJSON.parse([UInt8](data))
        func need<T>(_ value: T?, _ what: String) throws -> T {
            guard let value else { throw TaggerError("\(jsonURL.path): \(what) missing or malformed; rewrite it with write_tagger") }
            return value
        }
        let format = try need(json["format"]?.string, "format")
        guard format == Self.format else {
            throw TaggerError("\(jsonURL.path) is \(format), this tagger reads \(Self.format): rewrite it with write_tagger")
        }
        let arrays = try need(json["arrays"], "arrays")
        func array(_ name: String, _ shape: [Int]) throws -> [Float] {
            let entry = try need(arrays[name], "arrays.\(name)")
            let file = try need(entry["file"]?.string, "arrays.\(name).file")
            let declared = try need(entry["shape"]?.array?.compactMap(\.int), "arrays.\(name).shape")
            guard declared == shape else {
                throw TaggerError("\(jsonURL.path): \(name) has shape \(declared), the architecture needs \(shape); rewrite it with write_tagger")
            }
            let url = folder.appendingPathComponent(file)
            guard let bytes = FileManager.default.contents(atPath: url.path) else {
                throw TaggerError("no \(url.path): rewrite the tagger folder with write_tagger")
            }
            let count = shape.reduce(1, *)
            guard bytes.count == count * 4 else {
                throw TaggerError("\(url.path) holds \(bytes.count) bytes, \(name) \(shape) needs \(count * 4): rewrite it with write_tagger")
            }
            return Self.floats(bytes)
        }

        let width = try need(json["width"]?.int, "width")
        self.width = width
        let pieces = try need(json["maxout_pieces"]?.int, "maxout_pieces")
        var tables: [Table] = []
        for entry in try need(json["attrs"]?.array, "attrs") {
            let name = try need(entry["name"]?.string, "attrs.name")
            guard let attribute = LexemeFeatures.Attribute(rawValue: name) else {
                throw TaggerError("\(jsonURL.path): attribute \(name) is not one this tagger computes (NORM, PREFIX, SUFFIX, SHAPE, SPACY, IS_SPACE)")
            }
            let rows = try need(entry["rows"]?.int, "attrs.rows")
            let seed = try need(entry["seed"]?.int, "attrs.seed")
            tables.append(Table(attribute: attribute, rows: rows, seed: UInt32(seed), E: try array("embed.\(name)", [rows, width])))
        }
        self.tables = tables
        func layer(_ prefix: String, nI: Int) throws -> MaxoutNorm {
            MaxoutNorm(
                W: try array("\(prefix).W", [width, pieces, nI]), b: try array("\(prefix).b", [width, pieces]),
                G: try array("\(prefix).G", [width]), beta: try array("\(prefix).beta", [width]),
                nO: width, nP: pieces, nI: nI)
        }
        mixer = try layer("mixer", nI: width * tables.count)
        let encoderJSON = try need(json["encoder"], "encoder")
        let window = try need(encoderJSON["window"]?.int, "encoder.window")
        self.window = window
        pad = try need(encoderJSON["pad"]?.int, "encoder.pad")
        let depth = try need(encoderJSON["depth"]?.int, "encoder.depth")
        encoder = try (0..<depth).map { try layer("encoder.\($0)", nI: width * (2 * window + 1)) }
        let epsJSON: Double? = json["layernorm_eps"].flatMap { if case .number(let d) = $0 { d } else { nil } }
        eps = Float(try need(epsJSON, "layernorm_eps"))
        let labels = try need(json["labels"]?.array?.compactMap(\.string), "labels")
        self.labels = labels
        outputW = try array("output.W", [labels.count, width])
        outputB = try array("output.b", [labels.count])
        var symbols: [[UInt8]: UInt64] = [:]
        for (name, value) in try need(json["symbols"]?.pairs, "symbols") {
            symbols[Array(name.utf8)] = UInt64(try need(value.int, "symbols[\(name)]"))
        }
        strings = SpacyStringIDs(symbols: symbols)
        normTables = try need(json["norm_tables"]?.array, "norm_tables").map { table in
            var out: [UInt64: String] = [:]
            for (key, value) in try need(table.pairs, "norm_tables[]") {
                out[try need(UInt64(key, radix: 16), "norm_tables key \(key)")] = try need(value.string, "norm_tables[\(key)]")
            }
            return out
        }
    }
}
