import XCTest

@testable import VoxportText

/// Chatterbox Turbo's front end against the Python host on the whole corpus: the publisher's
/// Turbo `punc_norm`, `TurboTextTokenizer.ids` over GPT-2's byte-level BPE (Whisper's file with
/// `gpt2.overlay.json`'s keys), and `TurboTextTokenizer.chunks` at small budgets. The held-out
/// fifth of the corpus is counted apart.
final class ChatterboxTurboTextTests: XCTestCase {
    static let folder = TextFixtures.chatterboxTurbo

    /// `text_fixtures.gpt2_shaped`: Whisper's tokenizer.json with the overlay's keys.
    static func gpt2Tokenizer() throws -> Tokenizer {
        let overlay = try XCTUnwrap(TextFixtures.json(folder, "gpt2.overlay.json").pairs)
        var pairs = try XCTUnwrap(TextFixtures.whisperJSON(folder).pairs)
        for (key, value) in overlay {
            if let k = pairs.firstIndex(where: { $0.key == key }) { pairs[k].value = value } else { pairs.append((key, value)) }
        }
        return try Tokenizer(json: .object(pairs))
    }

    /// Every string of `part` through `got`, against `expected`; names the first miss and
    /// prints the counts.
    func compare<T: Equatable>(
        _ what: String, _ part: TextFixtures.Part, expected: [T], _ got: (String) throws -> T
    ) throws {
        let corpus = try TextFixtures.corpus(Self.folder)
        XCTAssertEqual(expected.count, corpus.strings.count, "\(what): one entry per corpus string")
        var compared = 0, equal = 0
        var firstMiss: String? = nil
        for i in corpus.indices(part) {
            compared += 1
            let g = try got(corpus.strings[i])
            if g == expected[i] {
                equal += 1
            } else if firstMiss == nil {
                firstMiss = "string \(i) \(corpus.strings[i].debugDescription): swift \(g) vs python \(expected[i])"
            }
        }
        print("[chatterbox_turbo] \(what) (\(part.rawValue)): \(compared) strings compared, \(equal) equal")
        XCTAssertGreaterThan(compared, part == .heldOut ? 1_000 : 5_000)
        XCTAssertEqual(equal, compared, firstMiss ?? "")
    }

    /// Compared scalar by scalar: String == would pass canonically equivalent text.
    func checkPuncNorm(_ part: TextFixtures.Part) throws {
        let expected = try XCTUnwrap(TextFixtures.json(Self.folder, "front.json").array?.compactMap(\.string))
        try compare("punc_norm", part, expected: expected.map { Array($0.unicodeScalars) }) {
            Array(ChatterboxTurboText.puncNorm($0).unicodeScalars)
        }
    }

    func checkIds(_ part: TextFixtures.Part) throws {
        let front = ChatterboxTurboText(tokenizer: try Self.gpt2Tokenizer())
        let expected = try TextFixtures.idLists(Self.folder, "gpt2.front.ids.bin")
        try compare("front end ids", part, expected: expected) { Optional(try front.ids($0)) }
    }

    func testPuncNorm() throws { try checkPuncNorm(.building) }
    func testPuncNormHeldOut() throws { try checkPuncNorm(.heldOut) }
    func testFrontEndIds() throws { try checkIds(.building) }
    func testFrontEndIdsHeldOut() throws { try checkIds(.heldOut) }

    func testLongTextSplitToTheBudget() throws {
        let front = ChatterboxTurboText(tokenizer: try Self.gpt2Tokenizer())
        let cases = try XCTUnwrap(TextFixtures.json(Self.folder, "chunks.json").array)
        var split = 0, refused = 0
        for c in cases {
            let text = try XCTUnwrap(c["text"]?.string), budget = try XCTUnwrap(c["budget"]?.int)
            if let error = c["error"]?.string {
                XCTAssertThrowsError(try front.chunks(text, budget: budget)) { XCTAssertEqual("\($0)", error) }
                refused += 1
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
        print("[chatterbox_turbo] chunks: \(cases.count) cases, \(split) split into several chunks, \(refused) refused")
        XCTAssertGreaterThan(split, 100)
        XCTAssertGreaterThan(refused, 0)
    }
}
