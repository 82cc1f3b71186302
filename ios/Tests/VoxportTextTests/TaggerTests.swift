import Foundation
import VoxportCore
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// The Swift port of misaki's tagger (spaCy en_core_web_sm's tok2vec + tagger) against spaCy
/// itself: `conversion/kokoro/tagger/swift_case.py` (a Python child) writes the exported
/// tagger folder and, for every corpus sentence, spaCy's tokens, tags, feature ids and scores,
/// and thinc's intermediate arrays for the first sentences. Nothing expected is computed from
/// the exported folder. A run tags the fixed subset `swift_case.in_subset` picks (156 of 2,071
/// sentences; the four tests take ~28 s in a debug build); VP_TAGGER_ALL=1 tags the whole
/// corpus (the release-build measurement).
final class TaggerTests: XCTestCase {
    struct Case {
        let folder: URL
        let sentences: [(index: Int, heldOut: Bool, tokens: [TaggerToken], tags: [String])]
        let checked: Int
        let features: [UInt64]
        let logits: [Float]
        let embed: [Float]
        let tok2vec: [Float]
        let all: Bool
    }

    nonisolated(unsafe) static var cached: Case?

    static func load() throws -> Case {
        if let c = cached { return c }
        let all = ProcessInfo.processInfo.environment["VP_TAGGER_ALL"] == "1"
        let out = try TestScratch.folder("tagger-case")
        try PythonChild.run(
            PythonChild.repo.appendingPathComponent("conversion/kokoro/tagger/swift_case.py"), [out.path] + (all ? [] : ["--subset"]))
        let json = try ExactJSON.parse([UInt8](try Data(contentsOf: out.appendingPathComponent("cases.json"))))
        var sentences: [(index: Int, heldOut: Bool, tokens: [TaggerToken], tags: [String])] = []
        for s in try XCTUnwrap(json["sentences"]?.array) {
            var tokens: [TaggerToken] = [], tags: [String] = []
            for t in try XCTUnwrap(s["tokens"]?.array) {
                tokens.append(TaggerToken(try XCTUnwrap(t["text"]?.string), spaceAfter: try XCTUnwrap(t["ws"]?.bool), norm: t["norm"]?.string))
                tags.append(try XCTUnwrap(t["tag"]?.string))
            }
            sentences.append((try XCTUnwrap(s["index"]?.int), try XCTUnwrap(s["held_out"]?.bool), tokens, tags))
        }
        func floats(_ name: String) throws -> [Float] { TaggerWeights.floats(try Data(contentsOf: out.appendingPathComponent(name))) }
        let f = try Data(contentsOf: out.appendingPathComponent("features.u64"))
        let features = f.withUnsafeBytes { raw in (0..<(f.count / 8)).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) } }
        let c = Case(
            folder: out.appendingPathComponent("tagger"), sentences: sentences, checked: try XCTUnwrap(json["checked"]?.int),
            features: features, logits: try floats("logits.f32"), embed: try floats("embed.f32"), tok2vec: try floats("tok2vec.f32"),
            all: all)
        cached = c
        return c
    }

    /// Every token's six feature ids (NORM, PREFIX, SUFFIX, SHAPE, SPACY, IS_SPACE) equal
    /// spaCy's `doc.to_array`, exactly: the lexeme attributes, the norm tables and the string hash.
    func testFeatureIDsEqualSpacy() throws {
        let c = try Self.load()
        let tagger = try PartOfSpeechTagger(folder: c.folder)
        let n = tagger.features.attributes.count
        var at = 0, compared = 0
        var misses: [String] = []
        for s in c.sentences {
            for token in s.tokens {
                let got = tagger.features.ids(token)
                let want = Array(c.features[(at * n)..<((at + 1) * n)])
                compared += 1
                if got != want, misses.count < 10 { misses.append("\(token.text.debugDescription): swift \(got) spaCy \(want)") }
                at += 1
            }
        }
        XCTAssertEqual(at * n, c.features.count, "one feature row per token")
        print("[tagger] feature ids: \(compared) tokens compared, \(misses.count == 0 ? "all equal" : "misses")")
        XCTAssertEqual(misses, [])
    }

    /// Layer by layer on the first sentences: MultiHashEmbed's output, the encoder's output and
    /// the scores within float32 rounding of thinc's.
    func testLayersMatchThinc() throws {
        let c = try Self.load()
        let w = try PartOfSpeechTagger(folder: c.folder)
        var embed: [Float] = [], encoded: [Float] = [], scores: [Float] = []
        for s in c.sentences.prefix(c.checked) {
            let e = w.weights.embed(s.tokens.map(w.features.ids))
            let x = w.weights.encode(e)
            embed += e
            encoded += x
            scores += w.weights.scores(x)
        }
        func worst(_ a: [Float], _ b: [Float]) -> Float { zip(a, b).map { abs($0 - $1) }.max() ?? .infinity }
        XCTAssertEqual(embed.count, c.embed.count)
        XCTAssertEqual(encoded.count, c.tok2vec.count)
        let (de, dx, ds) = (worst(embed, c.embed), worst(encoded, c.tok2vec), worst(scores, Array(c.logits.prefix(scores.count))))
        print("[tagger] \(c.checked) sentences: max |swift - thinc| embed \(de), tok2vec \(dx), scores \(ds)")
        XCTAssertLessThan(de, 1e-3)
        XCTAssertLessThan(dx, 1e-3)
        XCTAssertLessThan(ds, 1e-3)
    }

    /// Swift tags == spaCy's `tag_` on >= 99.9 % of tokens, on the building part and on the
    /// held-out fifth separately; every disagreement listed with both sides' score margins.
    func testTagAgreement() throws {
        let c = try Self.load()
        let tagger = try PartOfSpeechTagger(folder: c.folder)
        let L = tagger.labels.count
        var tally = [false: (tokens: 0, equal: 0, sentences: 0), true: (tokens: 0, equal: 0, sentences: 0)]
        var seconds = 0.0
        var row = 0
        for s in c.sentences {
            defer { row += s.tokens.count }
            let start = Date()
            let tags = tagger.tag(s.tokens)
            seconds += Date().timeIntervalSince(start)
            let scores = tags == s.tags ? [] : tagger.scores(s.tokens)
            tally[s.heldOut]!.sentences += 1
            for (t, tag) in tags.enumerated() {
                tally[s.heldOut]!.tokens += 1
                if tag == s.tags[t] {
                    tally[s.heldOut]!.equal += 1
                    continue
                }
                let mine = Array(scores[(t * L)..<((t + 1) * L)])
                let theirs = Array(c.logits[((row + t) * L)..<((row + t + 1) * L)])
                let (a, b) = (tagger.labels.firstIndex(of: tag)!, tagger.labels.firstIndex(of: s.tags[t])!)
                print("[tagger] sentence \(s.index) token \(t) \(s.tokens[t].text.debugDescription): swift \(tag) spaCy \(s.tags[t]); "
                    + "swift margin \(mine[a] - mine[b]), spaCy margin \(theirs[b] - theirs[a])")
            }
        }
        for heldOut in [false, true] {
            let r = tally[heldOut]!
            let share = Double(r.equal) / Double(max(r.tokens, 1))
            print(String(format: "[tagger] %@ (%@): %d sentences, %d tokens, %d equal tags (%.4f %%)",
                         heldOut ? "held-out" : "building", c.all ? "whole corpus" : "subset", r.sentences, r.tokens, r.equal, 100 * share))
            XCTAssertGreaterThan(r.tokens, c.all ? (heldOut ? 7_000 : 30_000) : (heldOut ? 900 : 2_000))
            XCTAssertGreaterThanOrEqual(share, 0.999)
        }
        let n = tally[false]!.sentences + tally[true]!.sentences
        print(String(format: "[tagger] %.3f ms per sentence (%d sentences)", 1000 * seconds / Double(n), n))
    }

    func testMissingFolderNamesTheFix() {
        XCTAssertThrowsError(try PartOfSpeechTagger(folder: URL(fileURLWithPath: "/nonexistent/tagger"))) { error in
            XCTAssertTrue("\(error)".contains("write_tagger"), "\(error)")
        }
    }
}
