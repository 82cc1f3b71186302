import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The Swift port of spaCy's English tokenizer against spaCy itself:
/// `conversion/kokoro/tokenizer/swift_case.py` (a Python child) writes the exported tokenizer
/// folder and spaCy's `nlp.tokenizer(text)` for the tagger corpus, the lexicon corpus and a
/// seeded fuzz of edge strings. Nothing expected comes from the exported folder. A run takes
/// every fourth corpus sentence and all the fuzz; VP_TOKENIZER_ALL=1 takes every sentence.
final class SpacyTokenizerTests: XCTestCase {
    struct Case {
        let folder: URL
        let strings: [(source: String, index: Int, heldOut: Bool, text: String, tokens: [(text: String, ws: String, norm: String, lexNorm: String)])]
        let all: Bool
    }

    nonisolated(unsafe) static var cached: Case?

    static func load() throws -> Case {
        if let c = cached { return c }
        let all = ProcessInfo.processInfo.environment["VP_TOKENIZER_ALL"] == "1"
        let out = try TestScratch.folder("spacy-tokenizer-case")
        try PythonChild.run(
            PythonChild.repo.appendingPathComponent("conversion/kokoro/tokenizer/swift_case.py"), [out.path] + (all ? [] : ["--subset"]))
        let json = try ExactJSON.parse([UInt8](try Data(contentsOf: out.appendingPathComponent("cases.json"))))
        var strings: [(source: String, index: Int, heldOut: Bool, text: String, tokens: [(text: String, ws: String, norm: String, lexNorm: String)])] = []
        for s in try XCTUnwrap(json["strings"]?.array) {
            let tokens = try XCTUnwrap(s["tokens"]?.array).map { t in
                let f = try XCTUnwrap(t.array).map { try XCTUnwrap($0.string) }
                return (text: f[0], ws: f[1], norm: f[2], lexNorm: f[3])
            }
            strings.append((try XCTUnwrap(s["source"]?.string), try XCTUnwrap(s["index"]?.int), try XCTUnwrap(s["held_out"]?.bool),
                            try XCTUnwrap(s["text"]?.string), tokens))
        }
        let c = Case(folder: out.appendingPathComponent("tokenizer"), strings: strings, all: all)
        cached = c
        return c
    }

    /// Every string's tokens (text by UTF-16 units, trailing whitespace, and NORM) equal
    /// spaCy's: a Swift norm must be spaCy's token norm, and where Swift sets none spaCy's token
    /// norm must be the lexeme's own (no special case set one). Counted per source, building
    /// part and held-out fifth apart; every disagreeing string listed.
    func testTokensEqualSpacy() throws {
        let c = try Self.load()
        let start = Date()
        let tokenizer = try SpacyTokenizer(folder: c.folder)
        let loadSeconds = Date().timeIntervalSince(start)
        var tally: [String: (strings: Int, equal: Int)] = [:]
        var misses: [String] = []
        var seconds = 0.0
        for s in c.strings {
            let t0 = Date()
            let got = tokenizer.tokenize(s.text)
            seconds += Date().timeIntervalSince(t0)
            let equal = got.count == s.tokens.count && zip(got, s.tokens).allSatisfy { g, w in
                Array(g.text.utf16) == Array(w.text.utf16) && g.whitespace == w.ws
                    && Array((g.norm ?? w.lexNorm).utf16) == Array(w.norm.utf16)
            }
            let key = "\(s.source) \(s.heldOut ? "held-out" : "building")"
            tally[key, default: (0, 0)].strings += 1
            if equal {
                tally[key]!.equal += 1
            } else {
                let theirs = s.tokens.map { SpacyToken($0.text, whitespace: $0.ws, norm: $0.norm == $0.lexNorm ? nil : $0.norm) }
                misses.append("\(s.source) \(s.index) \(s.text.debugDescription): swift [\(got.map(\.description).joined(separator: ", "))] spaCy [\(theirs.map(\.description).joined(separator: ", "))]")
            }
        }
        for line in misses.prefix(40) { print("[spacy-tokenizer] \(line)") }
        var total = (strings: 0, equal: 0), heldOut = (strings: 0, equal: 0)
        for (key, r) in tally.sorted(by: { $0.key < $1.key }) {
            print("[spacy-tokenizer] \(key) (\(c.all ? "all" : "subset")): \(r.equal)/\(r.strings) strings equal")
            total.strings += r.strings
            total.equal += r.equal
            if key.hasSuffix("held-out") {
                heldOut.strings += r.strings
                heldOut.equal += r.equal
            }
        }
        print("[spacy-tokenizer] all: \(total.equal)/\(total.strings) strings equal; held-out fifth \(heldOut.equal)/\(heldOut.strings)")
        print(String(format: "[spacy-tokenizer] load %.3f s; %.3f ms per string (%d strings)", loadSeconds, 1000 * seconds / Double(c.strings.count), c.strings.count))
        XCTAssertGreaterThan(total.strings, c.all ? 8_000 : 3_000)
        XCTAssertEqual(misses.count, 0, "strings whose tokens differ from spaCy's")
    }

    /// A few hand-checked cases, each the reason for one rule: the special case's NORM,
    /// whitespace runs as tokens, a special case found after an infix split.
    func testRulesByExample() throws {
        let c = try Self.load()
        let tokenizer = try SpacyTokenizer(folder: c.folder)
        XCTAssertEqual(tokenizer.tokenize("I can't go."), [
            SpacyToken("I", whitespace: " "), SpacyToken("ca", whitespace: "", norm: "can"), SpacyToken("n't", whitespace: " ", norm: "not"),
            SpacyToken("go", whitespace: ""), SpacyToken(".", whitespace: ""),
        ])
        XCTAssertEqual(tokenizer.tokenize("a  b").map(\.text), ["a", " ", "b"])
        XCTAssertEqual(tokenizer.tokenize("(hello)").map(\.text), ["(", "hello", ")"])
    }

    func testMissingFolderNamesTheFix() {
        XCTAssertThrowsError(try SpacyTokenizer(folder: URL(fileURLWithPath: "/nonexistent/tokenizer"))) { error in
            XCTAssertTrue("\(error)".contains("write_tokenizer"), "\(error)")
        }
    }
}
