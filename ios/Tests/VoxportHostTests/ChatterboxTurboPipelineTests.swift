import Foundation
import XCTest
import VoxportCore
import VoxportHost
import VoxportRunner

/// The Turbo pipeline against one whole chunk of Python's `TurboPipeline.synthesize`
/// (`conversion/chatterbox_turbo/swift_pipeline_fixtures.py`): through a ReplayRunner that checks
/// every graph input the Swift host sends against the one Python sent, with the draws Python
/// made from its seed; then the steps that tell Turbo from Chatterbox on their own (the silence
/// tail, the mean-flow step and schedule) and the voice file.
final class ChatterboxTurboPipelineTests: XCTestCase {
    func testReplayedPipelineGivesPythonsTokensMelAndAudio() async throws {
        let fx = try ChatterboxTurboFixtures.pipeline.json(ChatterboxPipelineFixture.self, "pipeline.json")
        let z = try ChatterboxTurboFixtures.pipeline.npz("results.npz")
        let runner = try ChatterboxTurboFixtures.pipelineReplay()
        let host = try ChatterboxTurboPipeline(runner: runner, files: try ChatterboxTurboFixtures.pipelineFiles())
        var options = ChatterboxTurboOptions()
        options.steps = fx.steps
        let (audio, results) = try await host.speak(chunks: [fx.text_ids], options: options, draws: try RecordedChatterboxDraws(z))
        XCTAssertEqual(runner.remaining, 0, "every recorded call made, in order")
        XCTAssertEqual(runner.position, fx.calls.count)
        let r = results[0]
        XCTAssertEqual(r.t3.tokens, fx.tokens)
        XCTAssertEqual(r.t3.stopped, fx.stopped)
        XCTAssertEqual(r.speechTokens, fx.speech_tokens)
        XCTAssertEqual(r.flow.states.count, fx.steps + 1)
        // The Euler arithmetic is the same float32 operations in both hosts: the mel is exact.
        XCTAssertEqual(r.flow.mel.map(\.bitPattern), try z.array("mel").float32().map(\.bitPattern), "mel bit for bit")
        XCTAssertEqual(audio.count, fx.audio_samples)
        let err = chatterboxRelativeError(audio, try z.array("wav").float32())
        XCTAssertLessThanOrEqual(err, 1e-5, "max|d|/max|ref| = \(err)")
        print(String(format: "chatterbox turbo swift host: %d tokens -> %d S3Gen tokens, %d samples, wav rel err %.2e, %.2f ms host steps",
                     r.t3.tokens.count, r.speechTokens.count, audio.count, err, r.hostMilliseconds))
    }

    func testSpeechTokensGetTheSilenceTailAndKeepWhatFollowsAStartToken() throws {
        let fx = try ChatterboxTurboFixtures.pipeline.json(ChatterboxPipelineFixture.self, "pipeline.json")
        XCTAssertEqual(ChatterboxTurboSpeechTokens.forS3Gen(fx.tokens), fx.speech_tokens)
        XCTAssertTrue(fx.tokens.contains(ChatterboxTurboT3Tables.startSpeech), "the case draws a start token mid-sequence")
        XCTAssertNotEqual(SpeechTokens.dropInvalid(fx.tokens) + [4299, 4299, 4299], fx.speech_tokens, "Chatterbox's cut differs here")
        XCTAssertEqual(ChatterboxTurboSpeechTokens.forS3Gen([]), [4299, 4299, 4299])
    }

    func testMeanFlowStatesGivenRecordedVelocities() throws {
        let z = try ChatterboxTurboFixtures.pipeline.npz("results.npz")
        let files = try ChatterboxTurboFixtures.pipelineFiles()
        let states = try z.array("states"), v = try z.array("velocities")
        XCTAssertEqual(v.shape[1], 1, "mean-flow: one row")
        let (steps, total) = (v.shape[0], v.shape[3]), per = 80 * total
        let sAll = try states.float32(), vAll = try v.float32()
        let solver = FlowSolver(tables: files.flow, encoderBuckets: try .oneDim("N", sizes: [32]), estimatorBuckets: try .oneDim("F", sizes: [64]))
        XCTAssertTrue(files.flow.meanFlow && files.flow.cosineSchedule, "a cosine flag the mean-flow loop must ignore")
        let schedule = try solver.schedule(steps: steps)
        XCTAssertEqual(schedule, try z.array("t_span").float32(), "t_span bit for bit")
        XCTAssertEqual(schedule, [0, 0.5, 1])
        var x = Array(sAll[0..<per])
        for k in 0..<steps {
            x = FlowSolver.meanFlowStep(x, velocity: Array(vAll[(k * per)..<((k + 1) * per)]), dt: schedule[k + 1] - schedule[k])
            XCTAssertEqual(x, Array(sAll[((k + 1) * per)..<((k + 2) * per)]), "state \(k + 1) exact")
        }
        let spks = files.flow.speakerProjection(files.defaultVoice!.xvector)
        XCTAssertLessThanOrEqual(chatterboxRelativeError(spks, try z.array("spks").float32()), 1e-6)
    }

    func testVoiceFileAndCaps() throws {
        XCTAssertThrowsError(try ChatterboxTurboVoice.load(ChatterboxFixtures.url("bundle_files/voice_default.npz"))) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .user)
            XCTAssertTrue("\(e)".contains("is not a voxport-chatterbox_turbo-voice/1 file (format voxport-chatterbox-voice/1)"), "\(e)")
        }
        XCTAssertThrowsError(try ChatterboxTurboVoice.load(ChatterboxTurboFixtures.pipeline.url("results.npz"))) { e in
            XCTAssertTrue("\(e)".contains("(format none)"), "\(e)")
        }
        let voice = try ChatterboxTurboFixtures.pipelineFiles().defaultVoice!
        XCTAssertEqual(voice.promptFrames, 2 * voice.promptTokens.count)
        XCTAssertEqual(voice.t3Cond.speakerEmb.count, 256)
        let runner = try ChatterboxTurboFixtures.pipelineReplay()
        let host = try ChatterboxTurboPipeline(runner: runner, files: try ChatterboxTurboFixtures.pipelineFiles())
        XCTAssertNoThrow(try host.checkVoice(voice))
        let long = ChatterboxTurboVoice(
            t3SpeakerEmb: voice.t3SpeakerEmb, t3PromptTokens: [Int](repeating: 1, count: host.t3PromptTokensMax + 1),
            promptTokens: voice.promptTokens, promptFeat: voice.promptFeat, promptFrames: voice.promptFrames, xvector: voice.xvector)
        XCTAssertThrowsError(try host.checkVoice(long)) { e in
            XCTAssertTrue("\(e)".contains("T3 prompt tokens; this bundle takes at most \(host.t3PromptTokensMax)"), "\(e)")
        }
    }
}
