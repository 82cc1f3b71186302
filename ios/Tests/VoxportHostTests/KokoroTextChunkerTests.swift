import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
@testable import VoxportText

/// `KokoroTextChunker` (misaki's G2P in Swift, `MisakiEnglish`, and the chunker's rules) against
/// Python's `text_to_chunks` on the same texts: `conversion/kokoro/text/chunks_case.py` (a
/// Python child, ~10 s) writes misaki's three data folders, the published vocabulary, and per
/// text Python's chunks (text, phonemes, ids, tokens), warnings or error, with every espeak-ng
/// fallback answer recorded. Swift gets the text and the limit; the answers are replayed in
/// order, each only for the word it was recorded for. Strings compare code point by code point.
final class KokoroTextChunkerTests: XCTestCase {
    /// The recorded espeak-ng answers, given back in order (a word misaki did not ask for gets
    /// nothing, and the test sees the difference in `asked`).
    final class Replay: @unchecked Sendable {
        private var answers: ArraySlice<(text: String, phonemes: String?, rating: Int?)>
        private(set) var asked: [String] = []

        init(_ answers: [(text: String, phonemes: String?, rating: Int?)]) { self.answers = answers[...] }

        func answer(_ tk: MisakiG2PToken) -> (phonemes: String?, rating: Int?) {
            asked.append(tk.text)
            guard let a = answers.first, a.text.unicodeScalars.elementsEqual(tk.text.unicodeScalars) else { return (nil, nil) }
            answers.removeFirst()
            return (a.phonemes, a.rating)
        }
    }

    static func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }

    /// A chunk as both sides describe it, every string as code points (shown as text).
    struct Described: Equatable, CustomStringConvertible {
        let text: [UInt32]
        let phonemes: [UInt32]
        let ids: [Int32]
        let tokens: [[[UInt32]?]]

        static func shown(_ s: [UInt32]?) -> String {
            s.map { PythonRepr.string(String(String.UnicodeScalarView($0.compactMap(Unicode.Scalar.init)))) } ?? "None"
        }
        var description: String {
            "\(Self.shown(text)) \(Self.shown(phonemes)) \(ids) [\(tokens.map { $0.map(Self.shown).joined(separator: "/") }.joined(separator: " "))]"
        }
    }

    static func describe(_ c: KokoroChunk) -> Described {
        Described(
            text: scalars(c.text), phonemes: scalars(c.phonemes), ids: c.ids,
            tokens: c.tokens.map { [scalars($0.text), $0.phonemes.map(scalars), scalars($0.whitespace)] })
    }

    static func describe(_ c: [String: Any]) throws -> Described {
        let tokens = try XCTUnwrap(c["tokens"] as? [[Any]]).map { t in
            [scalars(t[0] as! String), (t[1] as? String).map(scalars), scalars(t[2] as! String)]
        }
        return Described(
            text: scalars(try XCTUnwrap(c["text"] as? String)), phonemes: scalars(try XCTUnwrap(c["phonemes"] as? String)),
            ids: try XCTUnwrap(c["ids"] as? [Int]).map(Int32.init), tokens: tokens)
    }

    nonisolated(unsafe) static var made: (folder: URL, cases: [[String: Any]])?

    static func pythonCases() throws -> (folder: URL, cases: [[String: Any]]) {
        if let made { return made }
        let out = try TestScratch.folder("kokoro-text-chunks")
        try PythonChild.run(PythonChild.repo.appendingPathComponent("conversion/kokoro/text/chunks_case.py"), [out.path])
        let cases = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("cases.json"))) as? [[String: Any]])
        made = (out, cases)
        return made!
    }

    /// Every case: the same chunks (text, phonemes, ids, the tokens each came from), the same
    /// warnings in the same order, or the same error; espeak-ng asked for the same words.
    func testEveryTextChunksAsPythonDoes() throws {
        let (folder, cases) = try Self.pythonCases()
        let english = try MisakiEnglish(folder: folder)
        let vocab = try KokoroVocab.load(folder.appendingPathComponent("vocab.json"))
        XCTAssertGreaterThanOrEqual(cases.count, 40)
        var chunks = 0
        for kase in cases {
            let text = kase["text"] as! String, maxIDs = kase["max_ids"] as! Int
            let label = "\(PythonRepr.string(text)) at \(maxIDs) ids"
            let recorded = (kase["fallbacks"] as! [[Any]]).map { ($0[0] as! String, $0[1] as? String, $0[2] as? Int) }
            let replay = Replay(recorded)
            let answer: KokoroFallback = { replay.answer($0) }
            let fallback = (kase["espeak"] as! Bool) ? answer : nil
            do {
                let got = try KokoroTextChunker(english: english, fallback: fallback, vocab: vocab, maxIDs: maxIDs).chunks(text)
                XCTAssertNil(kase["error"], "\(label): Python refused it (\(kase["error"] ?? ""))")
                let want = try (kase["chunks"] as? [[String: Any]] ?? []).map(Self.describe)
                XCTAssertEqual(got.chunks.map(Self.describe), want, label)
                XCTAssertEqual(got.warnings.map(Self.scalars), (kase["warnings"] as! [String]).map(Self.scalars), "\(label): warnings")
                chunks += want.count
            } catch {
                XCTAssertEqual(Self.scalars("\(error)"), Self.scalars(kase["error"] as? String ?? "(no error)"), label)
            }
            XCTAssertEqual(replay.asked.map(Self.scalars), recorded.map { Self.scalars($0.0) }, "\(label): the words espeak-ng was asked for")
        }
        XCTAssertGreaterThan(chunks, 200)
    }

    /// `KokoroParagraphs` alone: NFC by Python's tables, the newline rules, invisible characters.
    func testParagraphsFollowNormalizePy() {
        XCTAssertEqual(KokoroParagraphs.split(" a\r\nb\rc\u{2028}d \u{200B}e\u{00AD}f\t\tg\n\n\n h  ").map(Self.scalars),
                       ["a", "b", "c", "d e" + "f g", "h"].map(Self.scalars))
        XCTAssertEqual(KokoroParagraphs.split("Cafe\u{301}").map(Self.scalars), [Self.scalars("Caf\u{E9}")])
        XCTAssertEqual(KokoroParagraphs.split(" \u{FEFF}\n\u{7} "), [])
    }

    /// A number of more than 300 digits (digits, commas and zero-width characters in one run,
    /// `cli.py`'s `_NUMBER`) is refused before the G2P, at its first character in code points;
    /// 300 are read. (The wording against Python's own: KokoroTextBenchTests.)
    func testANumberTooLongIsRefusedBeforeTheG2P() throws {
        let (folder, _) = try Self.pythonCases()
        let asked = Replay([])
        let chunker = try KokoroTextChunker(
            english: try MisakiEnglish(folder: folder), fallback: { asked.answer($0) },
            vocab: try KokoroVocab.load(folder.appendingPathComponent("vocab.json")))
        let long = "🙂 Zorblatt counted 12,3\u{200B}" + String(repeating: "4", count: 297) + "5 sheep."
        XCTAssertThrowsError(try chunker.chunks(long)) { error in
            XCTAssertEqual((error as? VoxportError)?.kind, .user)
            XCTAssertTrue("\(error)".hasPrefix("TEXT has a number of 301 digits at character 19: the G2P reads numbers of up to 300"), "\(error)")
        }
        XCTAssertEqual(asked.asked, [], "refused before the G2P asked for a word")
        XCTAssertNoThrow(try KokoroTextChunker.checkNumbers("1" + String(repeating: ",234", count: 99) + "56, 7"))
        XCTAssertThrowsError(try KokoroTextChunker.checkNumbers(String(repeating: "٣", count: 301)), "Arabic-Indic digits count")
    }

    /// misaki raising (`MisakiG2P.Failure`: here a fallback that raises as misaki's number reader
    /// does) reaches the caller as a one-line user error, not as the G2P's own type.
    func testAG2PFailureIsAUserError() throws {
        let (folder, _) = try Self.pythonCases()
        let chunker = try KokoroTextChunker(
            english: try MisakiEnglish(folder: folder),
            fallback: { throw MisakiG2P.Failure(description: "misaki's number reader raises on \(PythonRepr.string($0.text))") },
            vocab: try KokoroVocab.load(folder.appendingPathComponent("vocab.json")))
        XCTAssertThrowsError(try chunker.chunks("Zorblatt waved.")) { error in
            XCTAssertEqual((error as? VoxportError)?.kind, .user, "\(type(of: error))")
            XCTAssertEqual(
                "\(error)", "TEXT has something the G2P cannot read (misaki's number reader raises on 'Zorblatt'): write it in words")
        }
    }
}
