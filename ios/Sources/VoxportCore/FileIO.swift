import Foundation

/// File reads and writes with errors that name the path (Foundation's say little on Linux).
enum FileIO {
    static func read(_ url: URL) throws -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw VoxportError(.io, "cannot read \(url.path): \(error.localizedDescription)")
        }
    }

    /// Atomic (temp file + rename), like the Python writers: a reader never sees half a file.
    static func write(_ data: Data, to url: URL) throws {
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw VoxportError(.io, "cannot write \(url.path): \(error.localizedDescription)")
        }
    }
}
