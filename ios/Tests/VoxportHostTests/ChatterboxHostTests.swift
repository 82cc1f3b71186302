import Foundation
import XCTest
import VoxportCore
import VoxportHost
import VoxportRunner

/// The Chatterbox host against the Python pipeline's recording (`swift_fixtures.py`): each
/// stage on its own, then the whole pipeline through a ReplayRunner that checks every graph
/// input the Swift host sends against the one the Python host sent.
final class ChatterboxHostTests: XCTestCase {
    func testReplayedPipelineGivesPythonsTokensAndAudio() async throws {
        let fx = try ChatterboxFixtures.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let z = try ChatterboxFixtures.results()
        let runner = try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: ChatterboxFixtures.manifest())
        let host = try ChatterboxPipeline(runner: runner, files: try ChatterboxFixtures.files())
        let start = DispatchTime.now().uptimeNanoseconds
        let (audio, results) = try await host.speak(chunks: [fx.text_ids], draws: try RecordedChatterboxDraws(z))
        let wallMs = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        XCTAssertEqual(runner.remaining, 0, "every recorded call made, in order")
        XCTAssertEqual(runner.position, fx.calls.count)
        let r = results[0]
        XCTAssertEqual(r.t3.tokens, fx.tokens)
        XCTAssertEqual(r.t3.stopped, fx.stopped)
        XCTAssertEqual(r.speechTokens, fx.speech_tokens)
        XCTAssertEqual(audio.count, fx.audio_samples)
        let err = chatterboxRelativeError(audio, try z.array("wav").float32())
        XCTAssertLessThanOrEqual(err, 1e-5, "max|d|/max|ref| = \(err)")
        let seconds = Double(audio.count) / Double(ChatterboxPipeline.sampleRate)
        print(String(format: "chatterbox swift host: %.2f ms host steps (%.2f ms wall) for %.2f s of audio (%.1f ms per audio second), rel err %.2e",
                     r.hostMilliseconds, wallMs, seconds, r.hostMilliseconds / seconds, err))
    }

    func testT3TokensFromRecordedLogitsAndUniforms() throws {
        let fx = try ChatterboxFixtures.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let draws = try RecordedChatterboxDraws(try ChatterboxFixtures.results())
        let runner = try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: ChatterboxFixtures.manifest())
        var history = [T3Tables.startSpeech], tokens: [Int] = []
        for step in 0..<fx.t3_steps {
            let logits = try runner.steps[step].outputs["logits"]!.float32()
            let n = logits.count / 2
            let token = try Sampling.sample(Array(logits[..<n]), uniforms: draws.uniformRows[step],
                                            config: ChatterboxOptions().sampling, previous: history, uncond: Array(logits[n...]))
            if token == T3Tables.stopSpeech { break }
            tokens.append(token)
            history.append(token)
        }
        XCTAssertEqual(tokens, fx.tokens)
        XCTAssertTrue(fx.tokens.contains(T3Tables.startSpeech), "the fixture exercises drop_invalid_tokens")
    }

    func testEmbedsAreThePublishersRows() throws {
        let files = try ChatterboxFixtures.files()
        let fx = try ChatterboxFixtures.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let runner = try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: ChatterboxFixtures.manifest())
        let cond = try files.defaultVoice!.condEmb()
        XCTAssertEqual(cond, try ChatterboxFixtures.results().array("cond_emb").float32())
        let (embeds, rows) = try files.t3.prefillEmbeds(condEmb: cond, textIDs: fx.text_ids)
        let want = runner.steps[0].inputs["embeds"]!
        let bucket = want.shape[1], h = files.t3.hidden, w = try want.float32()
        XCTAssertEqual(rows, 34 + fx.text_ids.count + 2)
        for b in 0..<2 {
            XCTAssertEqual(Array(embeds[(b * rows * h)..<((b + 1) * rows * h)]), Array(w[(b * bucket * h)..<(b * bucket * h + rows * h)]))
        }
        let step1 = try files.t3.stepEmbeds(token: fx.tokens[0], step: 0)
        XCTAssertEqual(step1, try runner.steps[1].inputs["embeds"]!.float32())
    }

    func testEulerStatesGivenRecordedVelocities() throws {
        let z = try ChatterboxFixtures.results()
        let files = try ChatterboxFixtures.files()
        let states = try z.array("states"), v = try z.array("velocities")
        let (steps, total) = (v.shape[0], v.shape[3]), per = 80 * total
        let sAll = try states.float32(), vAll = try v.float32()
        let schedule = try FlowTables.schedule(steps: steps, cosine: files.flow.cosineSchedule)
        XCTAssertEqual(schedule, try z.array("t_span").float32(), "t_span bit for bit")
        var x = Array(sAll[0..<per])
        for k in 0..<steps {
            x = FlowSolver.eulerStep(x, velocity: Array(vAll[(k * 2 * per)..<((k + 1) * 2 * per)]),
                                     dt: schedule[k + 1] - schedule[k], rate: files.flow.cfgRate)
            XCTAssertEqual(x, Array(sAll[((k + 1) * per)..<((k + 2) * per)]), "state \(k + 1) exact")
        }
        let spks = files.flow.speakerProjection(files.defaultVoice!.xvector)
        XCTAssertLessThanOrEqual(chatterboxRelativeError(spks, try z.array("spks").float32()), 1e-6)
    }

    func testVocoderHostSteps() throws {
        let z = try ChatterboxFixtures.results()
        let files = try ChatterboxFixtures.files()
        let runner = try ReplayRunner(recording: ChatterboxFixtures.url("recording"), manifest: ChatterboxFixtures.manifest())
        let f0 = try z.array("f0").float32()
        let draws = try RecordedChatterboxDraws(z).hift
        let source = try HiftSource(tables: files.hift).source(f0: f0, draws: draws)
        let wantSource = try z.array("source").float32()
        XCTAssertLessThanOrEqual(chatterboxRelativeError(source, wantSource), 1e-5)
        XCTAssertFalse(f0.allSatisfy { $0 > 10 } || f0.allSatisfy { $0 <= 10 }, "voiced and unvoiced frames")
        // The STFT of Python's own source against the trunk input Python sent (real frames).
        let trunk = runner.steps.last!
        let stft = try HiftSpectra.sourceSTFT(wantSource, tables: files.hift)
        let sent = try TensorSlices_cut(trunk.inputs["source_stft"]!, frames: stft.frames)
        XCTAssertLessThanOrEqual(chatterboxRelativeError(stft.values, sent), 1e-5)
        // iSTFT of the recorded trunk outputs: the clip at 100 and the clamp.
        let mag = try TensorSlices_cut(trunk.outputs["magnitude"]!, frames: stft.frames)
        XCTAssertTrue(mag.contains { $0 > HiftTables.magnitudeClip }, "the fixture exercises the clip")
        let phase = try TensorSlices_cut(trunk.outputs["phase"]!, frames: stft.frames)
        let wav = try HiftSpectra.inverse(magnitude: mag, phase: phase, frames: stft.frames, tables: files.hift)
        let clamped = try z.array("wav_clamped").float32()
        XCTAssertLessThanOrEqual(chatterboxRelativeError(Array(wav.prefix(clamped.count)), clamped), 1e-5)
        let faded = HiftSpectra.trimFade(clamped, fade: files.hift.trimFade!)
        XCTAssertEqual(faded, try z.array("wav").float32(), "trim_fade exact")
    }

    func testBadVoiceFileIsNamed() throws {
        XCTAssertThrowsError(try ChatterboxVoice.load(ChatterboxFixtures.url("voice_without_xvector.npz"))) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .user)
            XCTAssertTrue("\(e)".contains("lacks xvector"), "\(e)")
        }
        XCTAssertThrowsError(try ChatterboxVoice.load(ChatterboxFixtures.url("sampling.npz"))) { e in
            XCTAssertTrue("\(e)".contains("is not a voxport-chatterbox-voice/1 file"), "\(e)")
        }
        XCTAssertThrowsError(try files_defaultVoice().condEmb(exaggeration: 3)) { e in
            XCTAssertTrue("\(e)".contains("exaggeration"), "\(e)")
        }
    }

    func testTooManyTokensForTheKVCacheIsABucketError() throws {
        let files = try ChatterboxFixtures.files()
        let decoder = T3Decoder(tables: files.t3, prefillBuckets: try .oneDim("P", sizes: [48]), kvLength: 50)
        XCTAssertThrowsError(try decoder.checkFits(rows: 42, maxNewTokens: 16)) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .bucketOverflow)
            XCTAssertTrue("\(e)".contains("KV cache too short"), "\(e)")
        }
        XCTAssertEqual(try decoder.checkFits(rows: 42, maxNewTokens: 9), 48)
    }

    func files_defaultVoice() throws -> ChatterboxVoice { try ChatterboxFixtures.files().defaultVoice! }
}

/// The first `frames` frames of each row of a [1, rows, F] tensor, row-major.
func TensorSlices_cut(_ t: Tensor, frames: Int) throws -> [Float] {
    let v = try t.float32(), rows = t.shape[1], f = t.shape[2]
    return (0..<rows).flatMap { r in v[(r * f)..<(r * f + frames)] }
}
