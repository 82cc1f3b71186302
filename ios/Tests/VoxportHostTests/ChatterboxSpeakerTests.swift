import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// ChatterboxSpeaker over the Python pipeline's recording (`Fixtures/chatterbox`, one chunk of
/// text ids [START] 5 17 30 101 [STOP]): the stream against `ChatterboxPipeline.speak`.
final class ChatterboxSpeakerTests: XCTestCase {
    /// The recorded ids are the fixture writer's, from no real tokenizer: this character-level
    /// WordLevel tokenizer (the stand-in's shape and specials) says "Hey!" as 5 17 30 101, and
    /// has "h", "." and [SPACE] for a second sentence.
    static func tokenizer() throws -> Tokenizer {
        let vocab = ["[STOP]": 0, "[UNK]": 1, "[SPACE]": 2, "H": 5, "e": 17, "y": 30, "!": 101, "h": 40, ".": 41, "[START]": 255]
        let added = ["[STOP]": 0, "[UNK]": 1, "[SPACE]": 2, "[START]": 255].sorted { $0.value < $1.value }.map { name, id in
            ["id": id, "content": name, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true] as [String: Any]
        }
        let doc: [String: Any] = [
            "version": "1.0", "truncation": NSNull(), "padding": NSNull(), "added_tokens": added, "normalizer": NSNull(),
            "pre_tokenizer": ["type": "Split", "pattern": ["String": ""], "behavior": "Isolated", "invert": false],
            "post_processor": NSNull(), "decoder": NSNull(),
            "model": ["type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"],
        ]
        let url = try TestScratch.folder("chatterbox-speaker").appendingPathComponent("tokenizer.json")
        try JSONSerialization.data(withJSONObject: doc).write(to: url)
        return try Tokenizer(contentsOf: url)
    }

    /// "Hey!" and a second sentence of 26 ids: 31 ids together, past a text budget of 30, so
    /// the front end splits them into two chunks, each within T3's 32 text positions.
    static let twoSentences = "Hey! " + Array(repeating: "hey", count: 6).joined(separator: " ") + "."

    /// The fixture bundle's manifest with `text_budget` 30: its own 60 is past its T3's 32 text
    /// positions (a reduced configuration), so a 60-id chunk would fail on the host.
    static func manifest(textBudget: Int) throws -> Manifest {
        var doc = try JSONSerialization.jsonObject(with: Data(contentsOf: ChatterboxFixtures.url("manifest.json"))) as! [String: Any]
        var config = doc["config"] as! [String: Any], inner = config["config"] as! [String: Any]
        inner["text_budget"] = textBudget
        config["config"] = inner
        doc["config"] = config
        return try Manifest.decode(try JSONSerialization.data(withJSONObject: doc))
    }

    func speaker(_ runner: any GraphRunner) throws -> ChatterboxSpeaker {
        try ChatterboxSpeaker(runner: runner, files: try ChatterboxFixtures.files(), tokenizer: try Self.tokenizer())
    }

    // `sending`: fresh options each time, moved into the speaking task.
    func options() throws -> sending ChatterboxSpeakOptions {
        var o = ChatterboxSpeakOptions()
        o.draws = try RecordedChatterboxDraws(try ChatterboxFixtures.results())
        return o
    }

    func replay() throws -> ReplayRunner {
        try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: ChatterboxFixtures.manifest())
    }

    func testChunkIsThePipelinesAudioFromText() async throws {
        let fx = try ChatterboxFixtures.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let (want, _) = try await ChatterboxPipeline(runner: try replay(), files: try ChatterboxFixtures.files())
            .speak(chunks: [fx.text_ids], draws: try RecordedChatterboxDraws(try ChatterboxFixtures.results()))

        let runner = try replay()
        let speaker = try speaker(runner)
        XCTAssertEqual(try speaker.chunks("hey!").map(\.ids), [fx.text_ids], "punc_norm capitalises, then the tokenizer")
        let chunks = try await SpeakerStreams.collect(try speaker.speak("hey!", voice: nil, options: try options()))
        XCTAssertEqual(runner.remaining, 0, "every recorded call made, in order")
        XCTAssertEqual(chunks.map(\.text), ["Hey!"])
        XCTAssertEqual(chunks.map(\.sampleRate), [24000])
        XCTAssertNil(chunks[0].words)
        XCTAssertEqual(chunks.flatMap(\.samples), want, "the stream is the pipeline's audio")
        XCTAssertEqual(want.count, fx.audio_samples)
    }

    func testLongTextIsSplitAndCancellingStopsTheGraphCalls() async throws {
        let fx = try ChatterboxFixtures.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let replay = try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: Self.manifest(textBudget: 30))
        // T3 resets its KV state once per chunk, then makes the recorded calls.
        let firstChunk = 1 + fx.calls.count
        let runner = GatedRunner(wrapping: replay, holdAt: firstChunk)
        let speaker = try speaker(runner)
        XCTAssertEqual(speaker.textBudget, 30)
        let split = try speaker.chunks(Self.twoSentences)
        XCTAssertEqual(split.map(\.text), ["Hey!", "Hey hey hey hey hey hey."])
        XCTAssertEqual(split.map(\.ids.count), [6, 26])
        XCTAssertEqual(split[0].ids, fx.text_ids)

        let got = try await SpeakerStreams.firstThenCancel(try speaker.speak(Self.twoSentences, voice: nil, options: try options()))
        try await SpeakerStreams.settle(runner)
        XCTAssertEqual(got.map(\.text), ["Hey!"])
        XCTAssertEqual(replay.remaining, 0, "the first chunk's calls all made (the replay holds no more)")
        // The consumer may cancel before the Speaker reaches the held call or while it waits there:
        // either way the Speaker makes no call after it.
        XCTAssertLessThanOrEqual(runner.attempts, firstChunk + 1, "a call made after the cancellation")
        XCTAssertFalse(runner.neverCancelled, "the consumer's cancellation reached the speaking task")
    }

    func testEmptyTextGetsPythonsWording() throws {
        let runner = try replay()
        let speaker = try speaker(runner)
        for bad in ["", "   ", " \n\t "] {
            XCTAssertThrowsError(try speaker.speak(bad, voice: nil, options: try options())) { e in
                XCTAssertEqual("\(e)", "chatterbox: the text is empty; give it something to say")
            }
        }
        XCTAssertEqual(runner.position, 0)
    }
}
