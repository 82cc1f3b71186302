import Foundation
import VoxportCore

/// A cloned voice (`voxport voice audio8_tts`, `conversion/audio8_tts/voice.py`): the reference
/// clip's codec codes [10, T] and its transcript's prompt segment as ids (the device has no
/// tokenizer, so registration stores them).
public struct Audio8Voice: Equatable, Sendable {
    public static let format = "voxport-audio8-voice/1"

    /// Codes, row-major [books, frames].
    public let codes: [Int32]
    public let frames: Int
    public let books: Int
    public let textIDs: [Int32]
    public let text: String

    public init(codes: [Int32], books: Int, textIDs: [Int32], text: String = "") throws {
        guard books > 0, !codes.isEmpty, codes.count % books == 0 else {
            throw VoxportError(.user, "voice codes must be [\(books), T > 0], got \(codes.count) values")
        }
        guard !textIDs.isEmpty else {
            throw VoxportError(.user, "a voice needs its transcript's ids (the publisher's prompt carries the reference's text)")
        }
        self.codes = codes
        self.books = books
        self.frames = codes.count / books
        self.textIDs = textIDs
        self.text = text
    }

    /// Book `b`'s code at frame `t`.
    public func code(book b: Int, frame t: Int) -> Int32 { codes[b * frames + t] }

    /// A voice npz as `Voice.save` writes it; a missing array or a wrong shape is named.
    public static func load(_ url: URL, books: Int = 10) throws -> Audio8Voice {
        let z = try NpzArchive.load(url)
        func need(_ name: String) throws -> NpyArray {
            guard let a = z[name] else {
                throw VoxportError(
                    .user, "voice file \(url.path) has no \(PythonRepr.string(name)) array (has: \(PythonRepr.list(z.names))): "
                        + "register it again with `voxport voice audio8_tts`")
            }
            return a
        }
        let format = try need("format").strings().first ?? ""
        guard format == Self.format else {
            throw VoxportError(.user, "\(url.path) is not an Audio8 voice file (format \(PythonRepr.string(format)))")
        }
        let codes = try need("codes")
        guard codes.shape.count == 2, codes.shape[0] == books, codes.shape[1] > 0 else {
            throw VoxportError(.user, "voice file \(url.path): codes have shape \(codes.shape), expected [\(books), T > 0]")
        }
        let values = try Self.integers(codes, url: url, name: "codes")
        let ids = try Self.integers(try need("text_ids"), url: url, name: "text_ids")
        let text = (try? z["text"]?.strings().first) ?? nil
        return try Audio8Voice(codes: values, books: books, textIDs: ids, text: text ?? "")
    }

    static func integers(_ a: NpyArray, url: URL, name: String) throws -> [Int32] {
        switch a.storage {
        case .int32(let v): return v
        case .int64(let v): return v.map { Int32(clamping: $0) }
        default: throw VoxportError(.user, "voice file \(url.path): \(name) is \(a.dtype), not integers")
        }
    }
}
