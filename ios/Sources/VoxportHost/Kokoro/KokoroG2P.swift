import Foundation
import VoxportCore
import VoxportText

/// misaki's English G2P data in a Kokoro bundle (`conversion/kokoro/g2p_files.py`): `g2p/`
/// holds `tokenizer/`, `tagger/` and `lexicon/` as `MisakiEnglish(folder:)` reads them, and
/// `fallback/`, the letter rules `MisakiLetterRules(folder:)` reads (what words in no lexicon
/// read as: `--fallback rules`). The folder is one host entry of the manifest, hashed as a whole
/// (every file's path and bytes): `ModelBundle.open` verifies it with the other files.
extension KokoroBundleFiles {
    /// The bundle's G2P folder (`g2p_files.G2P_FOLDER`).
    public static let g2pFolder = "g2p"
    /// The letter rules' folder inside it (`g2p_files.G2P_WRITERS`' "fallback").
    public static let fallbackFolder = "fallback"

    /// The letter rules in `bundle/g2p/fallback/`; a bundle exported before it carried them
    /// (layout 4) is refused in one line naming the fix.
    public static func letterRules(_ bundle: URL) throws -> MisakiLetterRules {
        let folder = bundle.appendingPathComponent(g2pFolder).appendingPathComponent(fallbackFolder)
        guard FileManager.default.fileExists(atPath: folder.appendingPathComponent(MisakiLetterRules.fileName).path) else {
            throw missingLetterRules(bundle)
        }
        return try MisakiLetterRules(folder: folder)
    }

    /// The one line a bundle whose `g2p/` lacks `fallback/` gets when asked to read text.
    public static func missingLetterRules(_ bundle: URL) -> VoxportError {
        VoxportError(
            .user, "\(bundle.path) has no \(g2pFolder)/\(fallbackFolder)/ (the letter rules that read words misaki's lexicon lacks; "
                + "the bundle was exported before it carried them): re-export it with `voxport export kokoro --overwrite`")
    }

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
