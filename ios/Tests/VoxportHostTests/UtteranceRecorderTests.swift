import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner

/// UtteranceRecorder over KokoroSpeaker on the Python pipeline's recorded answers (two chunks):
/// the utterance against `KokoroPipeline.speak`, progress once per chunk, and a cancelled
/// recording that throws and writes nothing.
final class UtteranceRecorderTests: XCTestCase {
    typealias Recording = KokoroSpeakerTests.Recording

    func testUtteranceIsThePipelinesAudioWithProgressPerChunk() async throws {
        let rec = try Recording()
        let pipeline = try KokoroPipeline(runner: try rec.runner(), vocab: try KokoroFixtures.vocab(), source: rec.source)
        let (want, _) = try await pipeline.speak(rec.fx.phonemes, voice: rec.voice, speed: rec.fx.speed, noise: RecordedNoise(draws: rec.noise))

        let speaker = try rec.speaker(try rec.runner())
        var seen: [SpeechProgress] = []
        // The recording is of Python's pipeline speaking phonemes: the Speaker's phoneme path.
        let stream = try speaker.speak(phonemes: rec.fx.phonemes, voice: rec.voice, options: rec.options())
        let u = try await UtteranceRecorder.record(stream, sampleRate: speaker.sampleRate) { seen.append($0) }
        XCTAssertEqual(bitwiseMismatches(u.samples, want), [], "the utterance is the pipeline's audio")
        XCTAssertEqual(u.samples.count, want.count)
        XCTAssertEqual(u.sampleRate, 24000)
        XCTAssertEqual(u.pieces, rec.fx.chunks.map(\.phonemes))
        XCTAssertEqual(u.chunkCount, 2)
        XCTAssertEqual(seen.map(\.piece), [0, 1])
        XCTAssertEqual(seen.map(\.pieceCount), [2, 2])
        XCTAssertEqual(seen.last!.audioSeconds, Double(want.count) / 24000, accuracy: 1e-12)
        XCTAssertLessThan(seen[0].audioSeconds, seen[1].audioSeconds)
        let first = try XCTUnwrap(u.firstAudioSeconds)
        XCTAssertEqual(seen.map(\.firstAudioSeconds), [first, first], "the first chunk's time, kept")
        XCTAssertEqual(seen[0].elapsedSeconds, first)
        XCTAssertLessThanOrEqual(first, u.totalSeconds)
        XCTAssertEqual(u.realTimeFactor, u.totalSeconds / u.audioSeconds, accuracy: 1e-12)

        let wav = try TestScratch.folder("utterance").appendingPathComponent("speech.wav")
        try u.writeWAV(to: wav)
        XCTAssertEqual(try Data(contentsOf: wav), try WavWriter.pcm16(want, sampleRate: 24000))
    }

    func testCancelledRecordingThrowsAndStopsTheGraphCalls() async throws {
        let rec = try Recording()
        let first = rec.fx.chunks[0].calls.count
        let runner = GatedRunner(wrapping: try rec.runner(), holdAt: first)
        let speaker = try rec.speaker(runner)
        let recording = Task {
            let stream = try speaker.speak(phonemes: rec.fx.phonemes, voice: rec.voice, options: rec.options())
            return try await UtteranceRecorder.record(stream, sampleRate: speaker.sampleRate) { _ in
                withUnsafeCurrentTask { $0?.cancel() }
            }
        }
        do {
            let u = try await recording.value
            XCTFail("a cancelled recording gave an utterance of \(u.chunkCount) chunks")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        try await SpeakerStreams.settle(runner)
        XCTAssertLessThanOrEqual(runner.attempts, first + 1, "a call made after the cancellation")
        XCTAssertFalse(runner.neverCancelled)
    }

    func testAChunkAtAnotherRateIsRefused() async throws {
        let (stream, c) = AsyncThrowingStream<SpeechChunk, any Error>.makeStream()
        c.yield(SpeechChunk(samples: [0.1], sampleRate: 16000, text: "x", piece: 0, pieceCount: 1))
        c.finish()
        await assertThrowsAsync({ _ = try await UtteranceRecorder.record(stream, sampleRate: 24000) }) { e in
            XCTAssertEqual("\(e)", "a chunk at 16000 Hz in a 24000 Hz utterance: pass the Speaker's sampleRate")
        }
    }
}
