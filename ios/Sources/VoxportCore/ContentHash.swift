import Foundation

/// The bundle hashes of `conversion/core/bundle.py`, byte for byte.
///
/// `content_hash(path)`: for a folder, every regular file under it in Python's `sorted(Path)`
/// order, each as `relative/path` (UTF-8), NUL, its bytes, NUL; for a single file the same with
/// its bare name. `file_sha256(path)`: the plain digest of the bytes.
public enum ContentHash {
    private static let chunk = 1 << 20

    public static func contentHash(of url: URL) throws -> String {
        var hasher = SHA256Hasher()
        let root = url.standardizedFileURL
        let rels: [String] = isDirectory(root) ? try filesInPathOrder(under: root) : [root.lastPathComponent]
        for rel in rels {
            hasher.update(Array(rel.utf8) + [0])
            let file = isDirectory(root) ? root.appendingPathComponent(rel) : root
            try feed(file, into: &hasher)
            hasher.update([0])
        }
        return hasher.hexDigest()
    }

    /// What `meta.files` records for a host entry (`bundle.host_digest`): a folder's content
    /// hash (Kokoro's `g2p/`), a file's sha256.
    public static func hostDigest(of url: URL) throws -> String {
        try isDirectory(url) ? contentHash(of: url) : fileSHA256(of: url)
    }

    public static func fileSHA256(of url: URL) throws -> String {
        var hasher = SHA256Hasher()
        try feed(url, into: &hasher)
        return hasher.hexDigest()
    }

    /// Relative paths of the regular files under `dir`, in the order Python's `sorted()` puts
    /// `Path` objects: component by component, each compared by code point. That is not plain
    /// string order (`a/b` sorts before `a-b` here; `-` < `/` as characters).
    ///
    /// Like `Path.rglob("*")` + `is_file()`: hidden files count, a symlink to a file counts (its
    /// target's bytes), a symlinked folder is neither entered nor counted.
    public static func filesInPathOrder(under dir: URL) throws -> [String] {
        var out: [String] = []
        try collect(dir.standardizedFileURL.path, prefix: "", into: &out)
        return out.sorted(by: pythonPathPrecedes)
    }

    /// Python's `PurePosixPath(a) < PurePosixPath(b)` for relative POSIX paths.
    public static func pythonPathPrecedes(_ a: String, _ b: String) -> Bool {
        let pa = a.split(separator: "/", omittingEmptySubsequences: true)
        let pb = b.split(separator: "/", omittingEmptySubsequences: true)
        for (x, y) in zip(pa, pb) where x != y {
            return x.unicodeScalars.lazy.map(\.value).lexicographicallyPrecedes(y.unicodeScalars.lazy.map(\.value))
        }
        return pa.count < pb.count
    }

    private static func collect(_ dirPath: String, prefix: String, into out: inout [String]) throws {
        let fm = FileManager.default
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: dirPath)
        } catch {
            throw VoxportError(.io, "cannot list \(dirPath): \(error.localizedDescription)")
        }
        for name in names {
            let path = dirPath + "/" + name
            let rel = prefix.isEmpty ? name : prefix + "/" + name
            let type = (try? fm.attributesOfItem(atPath: path)[.type] as? FileAttributeType) ?? nil
            var isDir: ObjCBool = false
            let exists = fm.fileExists(atPath: path, isDirectory: &isDir)  // follows symlinks
            if type == .typeDirectory {
                try collect(path, prefix: rel, into: &out)
            } else if exists && !isDir.boolValue && (type == .typeRegular || type == .typeSymbolicLink) {
                out.append(rel)
            }
        }
    }

    private static func isDirectory(_ url: URL) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) && isDir.boolValue
    }

    private static func feed(_ url: URL, into hasher: inout SHA256Hasher) throws {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw VoxportError(.io, "cannot read \(url.path): \(error.localizedDescription)")
        }
        defer { try? handle.close() }
        while true {
            let data: Data?
            do {
                data = try handle.read(upToCount: chunk)
            } catch {
                throw VoxportError(.io, "cannot read \(url.path): \(error.localizedDescription)")
            }
            guard let data, !data.isEmpty else { break }
            hasher.update(data)
        }
    }
}
