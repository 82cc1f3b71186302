import Foundation
import VoxportCore

/// The bundle folders an app can speak with, found where `voxport sideload` puts them
/// (`Documents/models/<bundle>/`): what the app's bundle picker lists.
public enum SpeakableBundles {
    /// The models `BundleSpeaker.open` speaks.
    public static let models: Set<String> = ["kokoro", "chatterbox", "audio8_tts"]

    public struct Entry: Sendable, Equatable {
        public let folder: URL
        public let model: String
        public let precision: String
        /// The folder's name, what the picker shows.
        public var name: String { folder.lastPathComponent }
    }

    /// Every direct subfolder of `root` whose manifest names a model that speaks, by name.
    /// Only manifests are read (hashes are verified when one is opened); a folder with no
    /// manifest, a malformed one, or another model (a graph-only bundle) is left out. A missing
    /// `root` is an empty list: nothing has been sideloaded yet.
    public static func list(in root: URL) -> [Entry] {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: root.path) else { return [] }
        return names.sorted().compactMap { name in
            let folder = root.appendingPathComponent(name, isDirectory: true)
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(Manifest.fileName)),
                  let manifest = try? Manifest.decode(data), models.contains(manifest.model)
            else { return nil }
            return Entry(folder: folder, model: manifest.model, precision: manifest.precision)
        }
    }

    /// What the text field takes for `model`: every model reads text (Kokoro through its G2P in
    /// Swift, `KokoroTextChunker`).
    public static func inputHint(model: String) -> String { "text" }
}
