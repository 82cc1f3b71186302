import Foundation
import VoxportCore

/// The fixture folder Python writes (`voxport fixtures swift` → `ios/Tests/Fixtures`), copied
/// once into this target's resources and read by every test target through it, or one of its
/// model folders (`FixtureFolder("kokoro")`).
public struct FixtureFolder: Sendable {
    /// The copied `Fixtures/` folder.
    public static let root: URL = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!

    public let url: URL

    /// `Fixtures/<sub>` (`""`: the folder itself).
    public init(_ sub: String = "") {
        url = sub.isEmpty ? Self.root : Self.root.appendingPathComponent(sub)
    }

    /// A fixture folder read where it lies in the checkout (not copied): fixtures of a model
    /// `voxport fixtures swift` does not reach yet.
    public init(inRepo rel: String) {
        url = PythonChild.repo.appendingPathComponent(rel)
    }

    public func url(_ rel: String) -> URL { url.appendingPathComponent(rel) }
    public func data(_ rel: String) throws -> Data { try Data(contentsOf: url(rel)) }
    public func json<T: Decodable>(_: T.Type, _ rel: String) throws -> T {
        try JSONDecoder().decode(T.self, from: data(rel))
    }
    /// Raw little-endian float32 (`RawF32`).
    public func f32(_ rel: String) throws -> [Float] { try RawF32.read(url(rel)) }
    public func npz(_ rel: String) throws -> NpzArchive { try NpzArchive.load(url(rel)) }
    public func manifest(_ rel: String = "manifest.json") throws -> Manifest { try Manifest.decode(data(rel)) }
}
