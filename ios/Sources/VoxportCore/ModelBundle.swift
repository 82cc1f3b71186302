import Foundation

/// A bundle folder opened through its manifest: `bundle.load_manifest` in Swift.
///
/// Opening verifies every hash before anything is loaded, so a tampered, truncated or partly
/// copied asset or host file is refused by name (a half-pushed asset would otherwise poison
/// the device's content-keyed compile cache; DESIGN.md).
public struct ModelBundle: Sendable {
    public let url: URL
    public let manifest: Manifest

    public static func open(_ url: URL, verify: Bool = true) throws -> ModelBundle {
        let dir = url.standardizedFileURL
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir.path, isDirectory: &isDir), isDir.boolValue else {
            throw VoxportError(.bundleNotFound, "no bundle at \(dir.path): run `voxport export` first")
        }
        let manifestURL = dir.appendingPathComponent(Manifest.fileName)
        guard FileManager.default.fileExists(atPath: manifestURL.path) else {
            throw VoxportError(.bundleNotFound, "\(dir.path) has no \(Manifest.fileName): not a voxport bundle")
        }
        let data = try FileIO.read(manifestURL)
        let bundle = ModelBundle(url: dir, manifest: try Manifest.decode(data, source: manifestURL.path))
        // Never a link out of the bundle nor an unlisted file, hashed or not (`load_manifest`).
        if verify { try bundle.verify() } else { try bundle.checkClosed() }
        return bundle
    }

    /// `bundle.check_closed`: the bundle holds only what its manifest lists, as real files and
    /// folders: no symbolic link anywhere in it, nothing but regular files and folders, and no
    /// top-level entry the manifest does not list (with Python's messages, in name order).
    public func checkClosed() throws {
        let fm = FileManager.default
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: url.path).sorted(by: Manifest.codePointOrder)
        } catch {
            throw VoxportError(.io, "\(url.path): cannot list the bundle (\(error))")
        }
        let known = manifest.entries
        if let stray = names.first(where: { !known.contains($0) }) {
            throw VoxportError(
                .bundleIntegrity,
                "\(url.path): \(stray) is not listed in its manifest (a bundle holds only its graphs, its host "
                    + "files and \(Manifest.fileName)): remove it, or re-export the bundle")
        }
        for name in names { try checkTree(name) }
    }

    private func checkTree(_ rel: String) throws {
        let fm = FileManager.default
        let path = url.appendingPathComponent(rel).path
        // attributesOfItem does not follow a final link (lstat), as Python's os.lstat.
        let type = (try? fm.attributesOfItem(atPath: path)[.type] as? FileAttributeType) ?? nil
        switch type {
        case .typeSymbolicLink?:
            throw VoxportError(
                .bundleIntegrity,
                "\(url.path): \(rel) is a symbolic link: a bundle holds only its own files, none linked "
                    + "from elsewhere; re-export the bundle")
        case .typeDirectory?:
            let children = (try? fm.contentsOfDirectory(atPath: path)) ?? []
            for child in children.sorted(by: Manifest.codePointOrder) { try checkTree("\(rel)/\(child)") }
        case .typeRegular?:
            return
        default:
            throw VoxportError(
                .bundleIntegrity, "\(url.path): \(rel) is not a regular file or folder; re-export the bundle")
        }
    }

    /// `bundle.verify_bundle`: every graph asset's content hash, then every host file's
    /// sha256 (a host folder's content hash), with Python's messages (graphs and files in name order, so the first failure
    /// reported is the same on every run).
    public func verify() throws {
        try checkClosed()
        let fm = FileManager.default
        for name in manifest.graphs.keys.sorted() {
            let g = manifest.graphs[name]!
            let asset = url.appendingPathComponent(g.asset)
            guard fm.fileExists(atPath: asset.path) else {
                throw VoxportError(
                    .bundleIntegrity, "\(url.path): asset \(g.asset) of graph \(PythonRepr.string(name)) is missing")
            }
            let actual = try ContentHash.contentHash(of: asset)
            if actual != g.sha256 {
                throw VoxportError(
                    .bundleIntegrity,
                    "\(url.path): asset \(g.asset) of graph \(PythonRepr.string(name)) does not match its manifest "
                        + "(sha256 \(actual.prefix(12))… != \(g.sha256.prefix(12))…): it was modified after export; "
                        + "re-export the bundle")
            }
        }
        for name in manifest.files.keys.sorted() { try verifyFile(name) }
    }

    /// `bundle.verify_bundle` for one host entry: a file's sha256, or a folder's content hash
    /// (Kokoro's `g2p/`: every file in it), against `meta.files`.
    public func verifyFile(_ name: String) throws {
        let file = try fileURL(name)
        if try !FileManager.default.fileExists(atPath: file.path) || ContentHash.hostDigest(of: file) != manifest.files[name] {
            throw VoxportError(.bundleIntegrity, "\(url.path): file \(name) is missing or modified; re-export the bundle")
        }
    }

    /// Where a graph's `.aimodel` lives.
    public func assetURL(graph: String) throws -> URL {
        guard let g = manifest.graphs[graph] else {
            throw VoxportError(
                .user,
                "no graph \(PythonRepr.string(graph)) in this bundle (has: \(PythonRepr.list(manifest.graphs.keys.sorted())))")
        }
        return url.appendingPathComponent(g.asset)
    }

    /// Where a host file (`meta.files`) lives; refuses names the manifest does not list.
    public func fileURL(_ name: String) throws -> URL {
        guard manifest.files[name] != nil else {
            throw VoxportError(
                .user, "no file \(PythonRepr.string(name)) in this bundle (has: \(PythonRepr.list(manifest.files.keys.sorted())))")
        }
        return url.appendingPathComponent(name)
    }
}
