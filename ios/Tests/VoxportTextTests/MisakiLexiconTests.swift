import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The Swift port of misaki's `Lexicon` against misaki itself:
/// `conversion/kokoro/lexicon/swift_case.py` (a Python child) writes the lexicon folder and
/// every distinct call of the real `Lexicon.__call__` made while misaki's G2P read the corpus
/// (plus direct calls with non-ASCII tokens and generated number tokens), with misaki's answers. Nothing expected comes
/// from the Swift side or the written files. A debug run checks every held-out and extra call
/// and a fixed half of the development calls (call index % 2 == 0); VP_MISAKI_ALL=1 checks
/// all of them.
final class MisakiLexiconTests: XCTestCase {
    struct Call {
        let set: String
        let token: MisakiLexiconToken
        let context: MisakiTokenContext
        let expected: MisakiLexiconAnswer
        /// misaki went on to `get_number` (and maybe raised there).
        let viaNumber: Bool
    }

    struct Case {
        let folder: URL
        let calls: [Call]
    }

    nonisolated(unsafe) static var cached: Case?

    static func load() throws -> Case {
        if let c = cached { return c }
        let out = try TestScratch.folder("misaki-lexicon-case")
        try PythonChild.run(PythonChild.repo.appendingPathComponent("conversion/kokoro/lexicon/swift_case.py"), [out.path])
        let text = try Data(contentsOf: out.appendingPathComponent("cases.jsonl"))
        var calls: [Call] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let row = try XCTUnwrap(ExactJSON.parse([UInt8](line)).array)
            XCTAssertEqual(row.count, 13)
            func double(_ v: ExactJSON) -> Double? { if case .number(let d) = v { d } else { nil } }
            let token = MisakiLexiconToken(
                text: try XCTUnwrap(row[1].string), alias: row[2].string, tag: try XCTUnwrap(row[3].string),
                stress: double(row[4]), currency: row[5].string, isHead: try XCTUnwrap(row[6].bool),
                numFlags: try XCTUnwrap(row[9].string))
            let context = MisakiTokenContext(futureVowel: row[7].bool, futureTo: try XCTUnwrap(row[8].bool))
            // misaki's number reader raising is the one `.number` answer.
            let expected: MisakiLexiconAnswer =
                row[10].string == "raises" ? .number : .word(phonemes: row[11].string, rating: row[12].int)
            calls.append(
                Call(
                    set: try XCTUnwrap(row[0].string), token: token, context: context, expected: expected,
                    viaNumber: row[10].string != "word"))
        }
        let c = Case(folder: out.appendingPathComponent("lexicon"), calls: calls)
        cached = c
        return c
    }

    nonisolated(unsafe) static var cachedLexicon: MisakiLexicon?

    /// The lexicon on the case's folder, loaded once for both test classes.
    static func lexicon(_ c: Case) throws -> MisakiLexicon {
        if let l = cachedLexicon { return l }
        let l = try MisakiLexicon(folder: c.folder)
        cachedLexicon = l
        return l
    }

    /// Phonemes compared scalar by scalar (String == would merge canonically equivalent ones).
    static func same(_ a: MisakiLexiconAnswer, _ b: MisakiLexiconAnswer) -> Bool {
        switch (a, b) {
        case (.number, .number): return true
        case (.word(let p, let r), .word(let q, let s)):
            return r == s && p.map { Array($0.unicodeScalars) } == q.map { Array($0.unicodeScalars) }
        default: return false
        }
    }

    /// Every checked call: the Swift lexicon's answer equals misaki's, phonemes and rating,
    /// numbers read by `get_number` included, and `.number` exactly where that raised.
    func testEveryCallEqualsMisaki() throws {
        let c = try Self.load()
        let start = Date()
        let lexicon = try Self.lexicon(c)
        let loaded = Date().timeIntervalSince(start)
        let all = ProcessInfo.processInfo.environment["VP_MISAKI_ALL"] == "1"
        var checked: [String: (equal: Int, total: Int)] = [:]
        var misses: [String] = []
        var numbers = 0
        let t0 = Date()
        // The generated number tokens are MisakiNumbersTests' to check.
        for (i, call) in c.calls.enumerated() where call.set != "number" && (all || call.set != "dev" || i % 2 == 0) {
            let got = lexicon(call.token, call.context)
            let ok = Self.same(got, call.expected)
            checked[call.set, default: (0, 0)].total += 1
            if ok { checked[call.set, default: (0, 0)].equal += 1 }
            if call.viaNumber { numbers += 1 }
            if !ok, misses.count < 20 {
                misses.append("\(call.token.text.debugDescription) tag \(call.token.tag) stress \(String(describing: call.token.stress)) ctx \(call.context): swift \(got) misaki \(call.expected)")
            }
        }
        let elapsed = Date().timeIntervalSince(t0)
        let total = checked.values.reduce(0) { $0 + $1.total }
        let summary = checked.keys.sorted().map { "\($0) \(checked[$0]!.equal)/\(checked[$0]!.total)" }.joined(separator: ", ")
        print(
            "[misaki-lexicon] \(summary) (\(numbers) number calls); load \(String(format: "%.2f", loaded)) s, "
                + "\(String(format: "%.1f", elapsed / Double(max(total, 1)) * 1e6)) µs per call")
        XCTAssertGreaterThan(total, 20_000)
        XCTAssertEqual(misses, [])
    }

    /// The lexicon grows misaki's dictionaries as packaged the way misaki's
    /// `Lexicon.grow_dictionary` does: key for key and entry for entry the dictionaries Python
    /// grew (`grown/`, written by the case; read here without growing).
    func testGrowEqualsMisakisGrowDictionary() throws {
        let c = try Self.load()
        let lexicon = try Self.lexicon(c)
        let grown = c.folder.deletingLastPathComponent().appendingPathComponent("grown")
        for (name, swift) in [("us_gold", lexicon.golds), ("us_silver", lexicon.silvers)] {
            let python = try MisakiDictionary(contentsOf: grown.appendingPathComponent("\(name).tsv"), grow: false)
            let packaged = try MisakiDictionary(contentsOf: c.folder.appendingPathComponent("\(name).tsv"), grow: false)
            XCTAssertGreaterThan(python.count, packaged.count * 3 / 2, "\(name): growing adds entries")
            XCTAssertEqual(swift.count, python.count, name)
            var differ: [String] = []
            for (key, entry) in python.allEntries() where swift[key.map { UInt32($0) }] != entry {
                if differ.count < 10 { differ.append("\(name) \(String(decoding: key, as: UTF8.self)): swift \(String(describing: swift[key.map { UInt32($0) }])) misaki \(entry)") }
            }
            XCTAssertEqual(differ, [])
            print("[misaki-lexicon] \(name): \(packaged.count) entries packaged, \(swift.count) grown (misaki: \(python.count))")
        }
    }

    /// A lexicon file from before the lexicon shipped as packaged (v1, grown) is refused in one
    /// line naming the fix: growing it again is not what misaki does.
    func testGrownV1FileIsRefused() throws {
        let folder = try TestScratch.folder("misaki-lexicon-v1")
        let file = folder.appendingPathComponent("us_gold.tsv")
        try Data("# misaki 0.9.4 en lexicon v1: key\\tphonemes | key\\t\\ttag=phonemes\\t...\nab\tæb\n".utf8).write(to: file)
        XCTAssertThrowsError(try MisakiDictionary(contentsOf: file)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("write_lexicon") && text.contains("--overwrite") && !text.contains("\n"), text)
        }
    }

    /// A missing lexicon folder is one line naming the fix.
    func testMissingFolderNamesTheWriter() {
        XCTAssertThrowsError(try MisakiLexicon(folder: URL(fileURLWithPath: "/nonexistent-misaki"))) { error in
            XCTAssertTrue("\(error)".contains("write_lexicon"), "\(error)")
        }
    }
}
