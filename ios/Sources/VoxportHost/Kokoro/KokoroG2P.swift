import Foundation
import VoxportCore
import VoxportText

/// misaki's English G2P data in a Kokoro bundle (`conversion/kokoro/g2p_files.py`): `g2p/`
/// holds `tokenizer/`, `tagger/` and `lexicon/` as `MisakiEnglish(folder:)` reads them. The
/// folder is one host entry of the manifest, hashed as a whole (every file's path and bytes):
/// `ModelBundle.open` verifies it with the other files.
extension KokoroBundleFiles {
    /// The bundle's G2P folder (`g2p_files.G2P_FOLDER`).
    public static let g2pFolder = "g2p"

    /// Where the bundle's `g2p/` lies; a bundle exported before it carried one is refused in
    /// one line naming the fix.
    public static func g2pURL(_ bundle: ModelBundle) throws -> URL {
        guard bundle.manifest.files[g2pFolder] != nil else {
            throw VoxportError(
                .user,
                "\(bundle.url.path) has no \(g2pFolder)/ (misaki's text-to-phoneme data; the bundle was exported before "
                    + "it carried it): re-export it with `voxport export kokoro --overwrite`")
        }
        return try bundle.fileURL(g2pFolder)
    }
}

extension MisakiEnglish {
    /// misaki's English G2P from an opened Kokoro bundle's `g2p/` (verified by `ModelBundle.open`).
    public init(bundle: ModelBundle, unk: String = "") throws {
        try self.init(folder: try KokoroBundleFiles.g2pURL(bundle), unk: unk)
    }
}
