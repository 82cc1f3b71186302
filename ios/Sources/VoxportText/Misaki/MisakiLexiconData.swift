import Foundation

/// One of misaki's grown dictionaries (gold or silver) as `conversion/kokoro/lexicon/writer.py`
/// writes it: `key TAB phonemes` or `key TAB TAB tag=phonemes TAB tag ...` per line.
///
/// Keys are UTF-8 bytes (every misaki key is ASCII; bytes keep the comparison exact where
/// `String` would merge canonically equivalent spellings); phonemes are scalar arrays.
struct MisakiDictionary: Sendable {
    enum Entry: Sendable {
        case plain([UInt32])
        /// Part-of-speech tag -> phonemes; nil is misaki's `None` (no reading for that tag).
        case tagged([String: [UInt32]?])
    }

    static let header = "# misaki 0.9.4 en lexicon v1: key\\tphonemes | key\\t\\ttag=phonemes\\t...\n"

    let entries: [[UInt8]: Entry]

    subscript(word: [UInt32]) -> Entry? {
        guard PythonText.isASCII(word) else { return nil }
        return entries[word.map { UInt8($0) }]
    }

    func contains(_ word: [UInt32]) -> Bool { self[word] != nil }

    init(contentsOf url: URL) throws {
        let bytes = [UInt8](try Data(contentsOf: url))
        let head = Array(Self.header.utf8)
        guard bytes.starts(with: head), bytes.last == 0x0A else {
            throw MisakiLexiconError("\(url.path) is not a misaki lexicon file (header or final newline missing); write it with conversion.kokoro.lexicon.write_lexicon")
        }
        var entries: [[UInt8]: Entry] = [:]
        entries.reserveCapacity(bytes.count / 24)
        var at = head.count
        while at < bytes.count {
            let end = bytes[at...].firstIndex(of: 0x0A)!
            let fields = bytes[at..<end].split(separator: 0x09, omittingEmptySubsequences: false)
            guard fields.count >= 2, !fields[0].isEmpty else {
                throw MisakiLexiconError("\(url.path): malformed line at byte \(at); rewrite it with write_lexicon")
            }
            let key = Array(fields[0])
            if fields.count == 2 {
                entries[key] = .plain(Self.decode(fields[1]))
            } else {
                var tags: [String: [UInt32]?] = [:]
                for f in fields[2...] {
                    if let eq = f.firstIndex(of: 0x3D) {
                        tags[String(decoding: f[f.startIndex..<eq], as: UTF8.self)] = .some(Self.decode(f[(eq + 1)...]))
                    } else {
                        tags[String(decoding: f, as: UTF8.self)] = .some(nil)
                    }
                }
                entries[key] = .tagged(tags)
            }
            at = end + 1
        }
        self.entries = entries
    }

    private static func decode(_ utf8: ArraySlice<UInt8>) -> [UInt32] {
        PythonText.scalars(String(decoding: utf8, as: UTF8.self))
    }
}

public struct MisakiLexiconError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
