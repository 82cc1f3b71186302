import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportHost
import VoxportRunner

/// KokoroSpeaker over the Python pipeline's recorded graph answers (`Fixtures/kokoro/pipeline`,
/// two chunks of three calls): the stream against `KokoroPipeline.speak` on the same inputs.
final class KokoroSpeakerTests: XCTestCase {
    struct Recording {
        let fx: PipelineFixture
        let outputs: [[String: Tensor]]
        let noise: [Int: SourceDraws]
        let source: HarmonicSource
        let voice: VoicePack

        init() throws {
            fx = try KokoroFixtures.json(PipelineFixture.self, "pipeline.json")
            var outputs: [[String: Tensor]] = [], noise: [Int: SourceDraws] = [:]
            for (i, c) in fx.chunks.enumerated() {
                for call in c.calls {
                    outputs.append(try NpzArchive.load(KokoroFixtures.url("pipeline/chunk\(i)_\(call.graph)_out.npz")).arrays)
                }
                let z = try NpzArchive.load(KokoroFixtures.url("pipeline/chunk\(i)_noise.npz"))
                noise[i] = SourceDraws(randIni: try z.array("rand_ini").float32(), sineNoise: try z.array("sine_noise").float32())
            }
            self.outputs = outputs
            self.noise = noise
            let s = try KokoroFixtures.json(SourceFixture.self, "source.json")
            source = try HarmonicSource(weight: try KokoroFixtures.f32(s.l_linear_weight), bias: try KokoroFixtures.f32(s.l_linear_bias)[0])
            voice = try KokoroFixtures.formulaPack(fx.voice_pack)
        }

        func runner() throws -> RecordedRunner {
            RecordedRunner(manifest: try KokoroHostTests.manifest(fx.buckets), outputs: outputs)
        }

        func speaker(_ runner: any GraphRunner) throws -> KokoroSpeaker {
            try KokoroSpeaker(runner: runner, vocab: try KokoroFixtures.vocab(), voices: VoiceLibrary(packs: [:]), source: source)
        }

        func options() -> KokoroSpeakOptions {
            var o = KokoroSpeakOptions()
            o.speed = fx.speed
            o.noise = RecordedNoise(draws: noise)
            return o
        }
    }

    func testChunksJoinToThePipelinesAudioAndCarryTheirPhonemes() async throws {
        let rec = try Recording()
        let pipelineRunner = try rec.runner()
        let pipeline = try KokoroPipeline(runner: pipelineRunner, vocab: try KokoroFixtures.vocab(), source: rec.source)
        let (want, _) = try await pipeline.speak(rec.fx.phonemes, voice: rec.voice, speed: rec.fx.speed, noise: RecordedNoise(draws: rec.noise))

        let runner = try rec.runner()
        let chunks = try await SpeakerStreams.collect(try rec.speaker(runner).speak(phonemes: rec.fx.phonemes, voice: rec.voice, options: rec.options()))
        XCTAssertEqual(chunks.map(\.text), rec.fx.chunks.map(\.phonemes), "one chunk per phoneme chunk, in order")
        XCTAssertEqual(chunks.map(\.piece), [0, 1])
        XCTAssertEqual(chunks.map(\.pieceCount), [2, 2])
        XCTAssertEqual(Set(chunks.map(\.sampleRate)), [24000])
        XCTAssertTrue(chunks.allSatisfy { $0.words == nil }, "Kokoro gives no word timings yet")
        let joined = chunks.flatMap(\.samples)
        XCTAssertEqual(joined.count, want.count)
        XCTAssertEqual(bitwiseMismatches(joined, want), [], "the stream is the pipeline's audio, bit for bit")
        XCTAssertEqual(bitwiseMismatches(joined, try KokoroFixtures.f32(rec.fx.audio)), [])
        XCTAssertEqual(runner.calls.map(\.function), pipelineRunner.calls.map(\.function))
    }

    func testCancellingAfterTheFirstChunkStopsTheGraphCalls() async throws {
        let rec = try Recording()
        let first = rec.fx.chunks[0].calls.count
        let runner = GatedRunner(wrapping: try rec.runner(), holdAt: first)
        let got = try await SpeakerStreams.firstThenCancel(
            try rec.speaker(runner).speak(phonemes: rec.fx.phonemes, voice: rec.voice, options: rec.options()))
        try await SpeakerStreams.settle(runner)
        XCTAssertEqual(got.map(\.piece), [0])
        // The consumer may cancel before the Speaker reaches the held call or while it waits there:
        // either way the Speaker makes no call after it.
        XCTAssertLessThanOrEqual(runner.attempts, first + 1, "a call made after the cancellation")
        XCTAssertFalse(runner.neverCancelled, "the consumer's cancellation reached the speaking task")
    }

    func testEmptyPhonemesAreRefusedBeforeAnyCall() throws {
        let rec = try Recording()
        let runner = try rec.runner()
        let speaker = try rec.speaker(runner)
        for bad in ["", "   "] {
            XCTAssertThrowsError(try speaker.speak(phonemes: bad, voice: rec.voice, options: rec.options())) { e in
                XCTAssertEqual("\(e)", "the phoneme string is empty: give phonemes to speak")
            }
        }
        XCTAssertThrowsError(try speaker.speak(phonemes: ".,", voice: rec.voice, options: rec.options())) { e in
            XCTAssertTrue("\(e)".contains("nothing to say"), "\(e)")
        }
        // No voice given and the bundle lacks the default one: named, not a crash.
        XCTAssertThrowsError(try speaker.speak(phonemes: rec.fx.phonemes, voice: nil, options: rec.options())) { e in
            XCTAssertTrue("\(e)".contains("jf_alpha"), "\(e)")
        }
        XCTAssertTrue(runner.calls.isEmpty)
    }
}
