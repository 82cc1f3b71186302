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
        if verify { try bundle.verify() }
        return bundle
    }

    /// `bundle.verify_bundle`: every graph asset's content hash, then every host file's
    /// sha256, with Python's messages (graphs and files in name order, so the first failure
    /// reported is the same on every run).
    public func verify() throws {
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
        for (name, digest) in manifest.files.sorted(by: { $0.key < $1.key }) {
            let file = url.appendingPathComponent(name)
            var isDir: ObjCBool = false
            let present = fm.fileExists(atPath: file.path, isDirectory: &isDir) && !isDir.boolValue
            if try !present || ContentHash.fileSHA256(of: file) != digest {
                throw VoxportError(
                    .bundleIntegrity, "\(url.path): file \(name) is missing or modified; re-export the bundle")
            }
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
