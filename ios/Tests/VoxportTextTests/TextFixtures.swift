import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The text fixtures Python writes (`conversion/chatterbox/text_fixtures.py`,
/// `conversion/audio8_tts/text_fixtures.py`): the corpus, the tokenizers, the ids Hugging Face
/// `tokenizers` gave every string.
enum TextFixtures {
    static let chatterbox = FixtureFolder("chatterbox/text")
    static let audio8 = FixtureFolder("audio8_tts/text")
    /// `conversion/chatterbox_turbo/text_fixtures.py` (beside Fixtures/ until Turbo is a
    /// registered model).
    static let chatterboxTurbo = FixtureFolder(inRepo: "ios/Tests/Fixtures/chatterbox_turbo/text")

    /// Which strings a test compares: the part the engine was built against, or the fifth held
    /// out of that loop (compared only once the engine was done, see the report in the issue).
    enum Part: String { case building, heldOut = "held-out", all }

    struct Corpus {
        let strings: [String]
        let heldOutEvery: Int

        func indices(_ part: Part) -> [Int] {
            strings.indices.filter {
                switch part {
                case .building: return $0 % heldOutEvery != heldOutEvery - 1
                case .heldOut: return $0 % heldOutEvery == heldOutEvery - 1
                case .all: return true
                }
            }
        }
    }

    /// Read through the exact-scalar JSON reader: Foundation's decoder would hand back the same
    /// scalars, but this keeps one reader for everything the tests hold against Python.
    static func corpus(_ folder: FixtureFolder = chatterbox) throws -> Corpus {
        let json = try ExactJSON.parse([UInt8](try folder.data("corpus.json")))
        let strings = try XCTUnwrap(json["strings"]?.array?.compactMap(\.string))
        return Corpus(strings: strings, heldOutEvery: try XCTUnwrap(json["held_out_every"]?.int))
    }

    /// `ids_file.write_ids`: LEB128 varints, each list its length + 1 then its ids; 0 = the
    /// Python side raised (nil).
    static func idLists(_ folder: FixtureFolder, _ name: String) throws -> [[Int32]?] {
        let bytes = [UInt8](try folder.data(name))
        var at = 0
        func varint() -> Int {
            var value = 0, shift = 0
            while true {
                let b = bytes[at]
                at += 1
                value |= Int(b & 0x7F) << shift
                if b < 0x80 { return value }
                shift += 7
            }
        }
        var out: [[Int32]?] = []
        while at < bytes.count {
            let n = varint()
            out.append(n == 0 ? nil : (0..<(n - 1)).map { _ in Int32(varint()) })
        }
        return out
    }

    static func json(_ folder: FixtureFolder, _ name: String) throws -> ExactJSON {
        try ExactJSON.parse([UInt8](try folder.data(name)))
    }

    // MARK: tokenizers

    /// Whisper's tokenizer.json where the venv holds it (not copied into the fixtures), checked
    /// to be the very file the Python side (of `folder`) encoded with.
    static func whisperJSON(_ folder: FixtureFolder = audio8) throws -> ExactJSON {
        let whereJSON = try json(folder, "whisper.json")
        let rel = try XCTUnwrap(whereJSON["venv_path"]?.string)
        let url = PythonChild.repo.appendingPathComponent(".venv").appendingPathComponent(rel)
        let data = try Data(contentsOf: url)
        XCTAssertEqual(sha256Hex(data), whereJSON["sha256"]?.string, "\(url.path) is not the file the fixtures were written from")
        return try ExactJSON.parse([UInt8](data))
    }

    /// `shapes.apply_overlay`: Whisper's file with the overlay's keys, the vocabulary less the
    /// added tokens' names and filled with placeholders below `vocab_fill_to`.
    static func qwen2JSON() throws -> ExactJSON {
        let base = try whisperJSON(), overlay = try json(audio8, "qwen2.overlay.json")
        let removed = Set((overlay["vocab_removed"]?.array ?? []).compactMap { $0.string.map { Array($0.utf8) } })
        let fillTo = overlay["vocab_fill_to"]?.int ?? 0
        var pairs = try XCTUnwrap(base.pairs)
        for (key, value) in try XCTUnwrap(overlay.pairs) where !key.hasPrefix("vocab_") {
            if let k = pairs.firstIndex(where: { $0.key == key }) { pairs[k].value = value } else { pairs.append((key, value)) }
        }
        let m = try XCTUnwrap(pairs.firstIndex { $0.key == "model" })
        var model = try XCTUnwrap(pairs[m].value.pairs)
        let v = try XCTUnwrap(model.firstIndex { $0.key == "vocab" })
        var vocab = try XCTUnwrap(model[v].value.pairs).filter { !removed.contains(Array($0.key.utf8)) }
        let taken = Set(vocab.compactMap { $0.value.int })
        for i in 0..<fillTo where !taken.contains(i) { vocab.append(("<|placeholder_\(i)|>", .number(Double(i)))) }
        model[v].value = .object(vocab)
        pairs[m].value = .object(model)
        return .object(pairs)
    }

    enum Name: String, CaseIterable {
        case whisper, qwen2, chatterboxShaped = "chatterbox-shaped", chatterboxStandIn = "chatterbox stand-in"
        case audio8StandIn = "audio8 stand-in"

        func tokenizerJSON() throws -> ExactJSON {
            switch self {
            case .whisper: return try whisperJSON()
            case .qwen2: return try qwen2JSON()
            case .chatterboxShaped: return try json(chatterbox, "shaped.tokenizer.json")
            case .chatterboxStandIn: return try json(chatterbox, "stand_in.tokenizer.json")
            case .audio8StandIn: return try json(audio8, "stand_in.tokenizer.json")
            }
        }

        /// What `tokenizers` gave every corpus string.
        func expected() throws -> [[Int32]?] {
            switch self {
            case .whisper: return try idLists(audio8, "whisper.ids.bin")
            case .qwen2: return try idLists(audio8, "qwen2.ids.bin")
            case .chatterboxShaped: return try idLists(chatterbox, "shaped.ids.bin")
            case .chatterboxStandIn: return try idLists(chatterbox, "stand_in.ids.bin")
            case .audio8StandIn: return try idLists(audio8, "stand_in.ids.bin")
            }
        }
    }

    static func sha256Hex(_ data: Data) -> String {
        var hasher = SHA256Hasher()
        hasher.update(data)
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
