import XCTest
import VoxportCore
import VoxportHost

final class KokoroTextTests: XCTestCase {
    func testIdsOfThePipelinesChunksMatchPython() throws {
        let vocab = try KokoroFixtures.vocab()
        let fx = try KokoroFixtures.json(TextFixture.self, "text.json")
        XCTAssertEqual(fx.sentences.count, 3)
        for s in fx.sentences {
            for c in s.chunks {
                let (ids, warning) = vocab.encode(c.phonemes)
                XCTAssertEqual(ids, c.ids, s.text)
                XCTAssertNil(warning)
                // A chunk the Python chunker made is one chunk to the phoneme chunker too.
                let again = try PhonemeChunker(maxIDs: 510, vocab: vocab).split(c.phonemes).chunks
                XCTAssertEqual(again.map(\.ids), [c.ids], s.text)
            }
        }
    }

    func testUnknownSymbolsAreDroppedWithPythonsWarning() throws {
        let vocab = try KokoroFixtures.vocab()
        let fx = try KokoroFixtures.json(TextFixture.self, "text.json")
        var warned = 0
        for c in fx.phonemes {
            let (ids, warning) = vocab.encode(c.phonemes)
            XCTAssertEqual(ids, c.ids, c.phonemes)
            XCTAssertEqual(warning, c.warning, c.phonemes)
            // The voice row counts every symbol, dropped ones included.
            XCTAssertEqual(KokoroChunk(phonemes: c.phonemes, ids: ids).nPhonemes, c.n_phonemes, c.phonemes)
            warned += c.dropped.isEmpty ? 0 : 1
        }
        XCTAssertEqual(warned, 2)
    }

    func testPhonemeSplitMatchesPython() throws {
        let vocab = try KokoroFixtures.vocab()
        let fx = try KokoroFixtures.json(TextFixture.self, "text.json")
        for split in fx.splits {
            let got = try PhonemeChunker(maxIDs: split.max_ids, vocab: vocab).split(fx.split_text).chunks
            XCTAssertEqual(got.map(\.phonemes), split.chunks.map(\.phonemes), "max_ids \(split.max_ids)")
            XCTAssertEqual(got.map(\.ids), split.chunks.map(\.ids), "max_ids \(split.max_ids)")
            XCTAssertTrue(got.allSatisfy { $0.ids.count <= split.max_ids })
        }
    }

    func testBadPhonemeInput() throws {
        let vocab = try KokoroFixtures.vocab()
        XCTAssertThrowsError(try PhonemeChunker(maxIDs: 2, vocab: vocab))
        XCTAssertEqual(try PhonemeChunker(maxIDs: 510, vocab: vocab).split("").chunks, [])
        let pack = try KokoroFixtures.formulaPack(0)
        XCTAssertThrowsError(try pack.row(nPhonemes: 0)) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .user)
        }
        XCTAssertThrowsError(try pack.row(nPhonemes: 511))
    }
}
