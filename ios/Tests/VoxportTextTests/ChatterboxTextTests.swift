import XCTest

@testable import VoxportText

/// Chatterbox's front end against the Python host on the whole corpus: the publisher's
/// `punc_norm`, `TextTokenizer.ids` (the trained shaped tokenizer and the stand-in), and
/// `TextTokenizer.chunks` at small budgets.
final class ChatterboxTextTests: XCTestCase {
    func testPuncNormOnEveryCorpusString() throws {
        let corpus = try TextFixtures.corpus()
        let expected = try XCTUnwrap(TextFixtures.json(TextFixtures.chatterbox, "front.json").array?.compactMap(\.string))
        XCTAssertEqual(expected.count, corpus.strings.count)
        var equal = 0
        for (s, want) in zip(corpus.strings, expected) {
            let got = ChatterboxText.puncNorm(s)
            // Compared scalar by scalar: String == would pass canonically equivalent text.
            if got.unicodeScalars.elementsEqual(want.unicodeScalars) {
                equal += 1
            } else {
                XCTFail("punc_norm(\(s.debugDescription)): \(got.debugDescription) vs \(want.debugDescription)")
                break
            }
        }
        print("[chatterbox] punc_norm: \(corpus.strings.count) strings compared, \(equal) equal")
    }

    func checkFrontEnd(_ tokenizerFile: String, _ idsFile: String) throws {
        let corpus = try TextFixtures.corpus()
        let front = ChatterboxText(tokenizer: try Tokenizer(json: try TextFixtures.json(TextFixtures.chatterbox, tokenizerFile)))
        let expected = try TextFixtures.idLists(TextFixtures.chatterbox, idsFile)
        var equal = 0
        for (s, want) in zip(corpus.strings, expected) {
            let got = try front.ids(s)
            if got == want { equal += 1 } else { XCTFail("ids(\(s.debugDescription)): \(got) vs \(want ?? [])"); break }
        }
        print("[chatterbox] front end over \(tokenizerFile): \(corpus.strings.count) strings compared, \(equal) equal")
        XCTAssertEqual(equal, corpus.strings.count)
    }

    func testFrontEndIdsShaped() throws { try checkFrontEnd("shaped.tokenizer.json", "shaped.front.ids.bin") }
    func testFrontEndIdsStandIn() throws { try checkFrontEnd("stand_in.tokenizer.json", "stand_in.front.ids.bin") }

    func testLongTextSplitToTheBudget() throws {
        let front = ChatterboxText(tokenizer: try Tokenizer(json: try TextFixtures.json(TextFixtures.chatterbox, "shaped.tokenizer.json")))
        let cases = try XCTUnwrap(TextFixtures.json(TextFixtures.chatterbox, "chunks.json").array)
        var split = 0
        for c in cases {
            let text = try XCTUnwrap(c["text"]?.string), budget = try XCTUnwrap(c["budget"]?.int)
            if let error = c["error"]?.string {
                XCTAssertThrowsError(try front.chunks(text, budget: budget)) { XCTAssertEqual("\($0)", error) }
                continue
            }
            let want = try XCTUnwrap(c["chunks"]?.array)
            let got = try front.chunks(text, budget: budget)
            XCTAssertEqual(got.count, want.count, "\(text.debugDescription) at \(budget)")
            for (g, w) in zip(got, want) {
                XCTAssertTrue(g.text.unicodeScalars.elementsEqual(try XCTUnwrap(w["text"]?.string).unicodeScalars), "\(g.text.debugDescription)")
                XCTAssertEqual(g.ids, try XCTUnwrap(w["ids"]?.array?.compactMap(\.int)).map { Int32($0) })
            }
            if want.count > 1 { split += 1 }
        }
        print("[chatterbox] chunks: \(cases.count) cases, \(split) split into several chunks")
        XCTAssertGreaterThan(split, 50)
    }
}
