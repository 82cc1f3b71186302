import XCTest

@testable import VoxportText

/// Audio8's prompt rows against `prompt.build_prompt`: the plain template for every corpus
/// string (Qwen2-shaped tokenizer; a refused text refused with Python's words), and the
/// reference template (Qwen2-shaped and the stand-in).
final class Audio8TextTests: XCTestCase {
    func testPlainPromptRowForEveryCorpusString() throws {
        let corpus = try TextFixtures.corpus(TextFixtures.audio8)
        let front = Audio8Text(tokenizer: try Tokenizer(json: try TextFixtures.qwen2JSON()))
        let expected = try TextFixtures.idLists(TextFixtures.audio8, "qwen2.prompt.ids.bin")
        var equal = 0, refused = 0
        for (s, want) in zip(corpus.strings, expected) {
            guard let want else {
                XCTAssertThrowsError(try front.promptSegments(text: s)) { XCTAssertEqual("\($0)", Audio8Text.emptyTextError) }
                refused += 1
                equal += 1
                continue
            }
            let got = try front.promptSegments(text: s)
            XCTAssertEqual(got.suffix, [Int32]())
            if got.prefix == want { equal += 1 } else { XCTFail("prompt(\(s.debugDescription)): \(got.prefix) vs \(want)"); break }
        }
        print("[audio8] plain prompt rows: \(corpus.strings.count) strings compared, \(equal) equal (\(refused) refused as empty by both)")
        XCTAssertEqual(equal, corpus.strings.count)
    }

    func checkReference(_ tokenizer: Tokenizer, _ file: String) throws {
        let front = Audio8Text(tokenizer: tokenizer)
        let fixture = try TextFixtures.json(TextFixtures.audio8, file)
        let semanticBegin = Int32(try XCTUnwrap(fixture["semantic_begin"]?.int))
        let cases = try XCTUnwrap(fixture["cases"]?.array)
        for c in cases {
            let text = try XCTUnwrap(c["text"]?.string), ref = try XCTUnwrap(c["reference_text"]?.string)
            guard let row = c["row0"]?.array?.compactMap(\.int) else {
                XCTAssertThrowsError(try front.promptSegments(text: text, referenceText: ref, withReference: true))
                continue
            }
            let codes = try XCTUnwrap(c["codes0"]?.array?.compactMap(\.int)).map { semanticBegin + Int32($0) }
            let seg = try front.promptSegments(text: text, referenceText: ref, withReference: true)
            XCTAssertEqual(seg.prefix + codes + seg.suffix, row.map { Int32($0) }, "\(text.debugDescription) / \(ref.debugDescription)")
        }
        print("[audio8] reference prompt rows (\(file)): \(cases.count) cases compared")
    }

    func testReferencePromptRows() throws {
        try checkReference(try Tokenizer(json: try TextFixtures.qwen2JSON()), "qwen2.reference.json")
        try checkReference(try Tokenizer(json: try TextFixtures.json(TextFixtures.audio8, "stand_in.tokenizer.json")), "stand_in.reference.json")
    }
}
