import Foundation
import VoxportCore

/// Phoneme symbols to Kokoro's input ids (`text/ids.py`): one id per code point through the
/// bundle's `vocab.json`; code points outside it are dropped and named in a warning (a
/// dropped symbol is a dropped sound), and the ids are wrapped in pad id 0.
public struct KokoroVocab: Sendable {
    public static let fileName = "vocab.json"
    public static let padID: Int32 = 0
    /// Symbols that carry no sound of their own (`ids.NON_SPEECH_SYMBOLS`).
    static let nonSpeech = Set(";:,.!?—…\"()“” \u{0303}↓→↗↘".unicodeScalars)

    public let ids: [Unicode.Scalar: Int32]
    let silent: Set<Int32>

    public init(_ ids: [Unicode.Scalar: Int32]) {
        self.ids = ids
        silent = Set(Self.nonSpeech.compactMap { ids[$0] }).union([Self.padID])
    }

    /// `vocab.json` as the bundle carries it: `{"vocab": {symbol: id}}`.
    public init(json data: Data, source: String = KokoroVocab.fileName) throws {
        let doc: [String: [String: Int]]
        do {
            doc = try JSONDecoder().decode([String: [String: Int]].self, from: data)
        } catch {
            throw VoxportError(.malformedFile, "\(source) is not a Kokoro vocabulary ({\"vocab\": {symbol: id}}): \(error)")
        }
        guard let vocab = doc["vocab"], !vocab.isEmpty else {
            throw VoxportError(.malformedFile, "\(source) has no \"vocab\" table")
        }
        var ids: [Unicode.Scalar: Int32] = [:]
        for (symbol, id) in vocab {
            let scalars = Array(symbol.unicodeScalars)
            if scalars.count == 1 { ids[scalars[0]] = Int32(id) }  // lookups are per code point
        }
        self.init(ids)
    }

    public static func load(_ url: URL) throws -> KokoroVocab {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw VoxportError(.io, "cannot read \(url.path): \(error.localizedDescription)")
        }
        return try KokoroVocab(json: data, source: url.lastPathComponent)
    }

    /// The ids of `phonemes` wrapped in pads, and the warning naming dropped symbols (nil when
    /// none was dropped), worded as Python's `UnknownPhonemeWarning`.
    public func encode(_ phonemes: String) -> (ids: [Int32], warning: String?) {
        var out: [Int32] = [Self.padID]
        var dropped: [(Unicode.Scalar, Int)] = []
        for s in phonemes.unicodeScalars {
            if let id = ids[s] {
                out.append(id)
            } else if let i = dropped.firstIndex(where: { $0.0 == s }) {
                dropped[i].1 += 1
            } else {
                dropped.append((s, 1))
            }
        }
        out.append(Self.padID)
        guard !dropped.isEmpty else { return (out, nil) }
        let named = dropped.map { s, n in
            "\(PythonRepr.string(String(s))) (U+\(PythonRepr.hex4(s.value))) x\(n)"
        }.joined(separator: ", ")
        let warning = "dropped phoneme symbols outside Kokoro's vocabulary: \(named); they will not be heard "
            + "(in \(PythonRepr.string(phonemes)))"
        return (out, warning)
    }

    /// True when some id stands for a sound (not a pad, punctuation or space).
    public func hasSpeech(_ ids: [Int32]) -> Bool { ids.contains { !silent.contains($0) } }
}
