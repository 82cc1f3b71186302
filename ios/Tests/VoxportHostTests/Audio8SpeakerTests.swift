import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// Audio8Speaker over the Python pipeline's recordings (`Fixtures/audio8_tts/pipeline`: two
/// sentences decoded whole, one sentence with a voice streamed by codec window), text through
/// the stand-in tokenizer the fixtures' ids came from: the stream against `Audio8Pipeline.speak`.
final class Audio8SpeakerTests: XCTestCase {
    static func fixtures() throws -> [String: Audio8PipelineFixture] {
        try JSONDecoder().decode([String: Audio8PipelineFixture].self, from: Data(contentsOf: Audio8Fixtures.url("pipeline.json")))
    }

    func speaker(_ runner: any GraphRunner) throws -> Audio8Speaker {
        try Audio8Speaker(runner: runner, tables: try Audio8Fixtures.tables(),
                          tokenizer: try Tokenizer(contentsOf: Audio8Fixtures.url("text/stand_in.tokenizer.json")))
    }

    func options(_ fx: Audio8PipelineFixture) -> Audio8SpeakOptions {
        var o = Audio8SpeakOptions()
        o.seed = fx.seed
        o.maxFrames = fx.max_frames
        o.stream = fx.stream
        return o
    }

    func testChunksJoinToThePipelinesAudioAndCarryTheirPieces() async throws {
        for (name, fx) in try Self.fixtures().sorted(by: { $0.key < $1.key }) {
            let voice = try fx.voice.map { try Audio8Voice.load(Audio8Fixtures.url("pipeline/\(name)/\($0)")) }
            let pipelineRunner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/\(name)", calls: fx.calls)
            let (want, _) = try await Audio8Pipeline(runner: pipelineRunner, tables: try Audio8Fixtures.tables()).speak(
                pieces: fx.pieces.map(\.ids), voice: voice, seed: fx.seed, maxFrames: fx.max_frames, stream: fx.stream)

            let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/\(name)", calls: fx.calls)
            let speaker = try speaker(runner)
            let pieces = try speaker.pieces(fx.text, voice: voice, maxFrames: fx.max_frames)
            XCTAssertEqual(pieces.map(\.text), fx.pieces.map(\.text), name)
            XCTAssertEqual(pieces.map(\.ids), fx.pieces.map(\.ids), "\(name): the Swift front end gives the recorded ids")
            let chunks = try await SpeakerStreams.collect(try speaker.speak(fx.text, voice: voice, options: options(fx)))
            XCTAssertTrue(runner.finished, "\(name): every recorded call made")
            // One chunk per codec window when streaming, per piece when decoded whole.
            let perPiece = fx.pieces.map { fx.stream ? $0.windows : 1 }
            XCTAssertEqual(chunks.map(\.text), zip(fx.pieces, perPiece).flatMap { Array(repeating: $0.text, count: $1) }, name)
            XCTAssertEqual(chunks.map(\.piece), perPiece.enumerated().flatMap { Array(repeating: $0.offset, count: $0.element) }, name)
            XCTAssertTrue(chunks.allSatisfy { $0.pieceCount == fx.pieces.count && $0.sampleRate == speaker.sampleRate && $0.words == nil }, name)
            let joined = chunks.flatMap(\.samples)
            XCTAssertEqual(joined, want, "\(name): the stream is the pipeline's audio")
            XCTAssertEqual(joined, try RawF32.read(Audio8Fixtures.url("pipeline/\(name)/\(fx.audio)")), name)
        }
    }

    func testCancellingAfterTheFirstPieceStopsTheGraphCalls() async throws {
        let fx = try Self.fixtures()["plain_whole"]!
        // Piece 0's reset, prefills, frames and whole decode: the entries up to piece 1's reset.
        let firstPiece = fx.calls.dropFirst().firstIndex { $0.reset != nil }!
        let checked = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/plain_whole", calls: fx.calls)
        let runner = GatedRunner(wrapping: checked, holdAt: firstPiece)
        let got = try await SpeakerStreams.firstThenCancel(try speaker(runner).speak(fx.text, voice: nil, options: options(fx)))
        try await SpeakerStreams.settle(runner)
        XCTAssertEqual(got.map(\.text), [fx.pieces[0].text])
        XCTAssertGreaterThanOrEqual(checked.position, firstPiece, "piece 0's calls all made")
        // The consumer may cancel before the Speaker reaches the held call or while it waits there:
        // either way the Speaker makes no call after it.
        XCTAssertLessThanOrEqual(runner.attempts, firstPiece + 1, "a call made after the cancellation")
        XCTAssertFalse(runner.neverCancelled, "the consumer's cancellation reached the speaking task")
    }

    func testBadTextGetsPythonsWording() throws {
        let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/plain_whole", calls: [])
        let speaker = try speaker(runner)
        for bad in ["", "   ", "\n\t "] {
            XCTAssertThrowsError(try speaker.speak(bad, voice: nil, options: Audio8SpeakOptions())) { e in
                XCTAssertEqual("\(e)", "audio8_tts: the text to speak is empty")
            }
        }
        var tooMany = Audio8SpeakOptions()
        tooMany.maxFrames = 512
        XCTAssertThrowsError(try speaker.speak("Hello.", voice: nil, options: tooMany)) { e in
            XCTAssertTrue("\(e)".contains("frames were asked for"), "\(e)")
        }
        XCTAssertEqual(runner.position, 0)
    }
}
