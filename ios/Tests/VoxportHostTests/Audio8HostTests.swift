import Foundation
import XCTest
import VoxportTestSupport
import VoxportCore
import VoxportDSP
import VoxportHost
import VoxportRunner

/// The Audio8 host's steps against the Python host's fixtures: exact wherever the math is.
final class Audio8HostTests: XCTestCase {
    func testPromptRowsAreThePythonPrompts() throws {
        let tables = try Audio8Fixtures.tables()
        let fx = try Audio8Fixtures.json(Audio8PromptFixture.self, "prompt.json")
        XCTAssertEqual(fx.cases.count, 9)
        for (i, c) in fx.cases.enumerated() {
            let voice = try c.voice_codes.map {
                try Audio8Voice(codes: Audio8Fixtures.flat($0), books: $0.count, textIDs: c.voice_text_ids!)
            }
            let got = try Audio8Prompt.build(textIDs: c.ids, voice: voice, tables: tables)
            XCTAssertEqual(got.rows, c.prompt.count, "case \(i)")
            XCTAssertEqual(got.columns, c.prompt[0].count, "case \(i)")
            XCTAssertEqual(got.values, Audio8Fixtures.flat(c.prompt), "case \(i)")
        }
    }

    func testPromptBudgetIsPythonsCheck() throws {
        let tables = try Audio8Fixtures.tables()
        let b = try Audio8Fixtures.json(Audio8PromptFixture.self, "prompt.json").budget
        let p = try Audio8Prompt.build(textIDs: b.ids, voice: nil, tables: tables)
        XCTAssertEqual(p.columns, b.columns)
        XCTAssertNoThrow(try Audio8Prompt.checkBudget(columns: p.columns, maxFrames: b.fits, tables: tables))
        XCTAssertThrowsError(try Audio8Prompt.checkBudget(columns: p.columns, maxFrames: b.fits + 1, tables: tables)) { e in
            XCTAssertEqual("\(e)", b.error)
        }
    }

    func testUniformsAreNumpysDraws() throws {
        let fx = try Audio8Fixtures.json(Audio8UniformsFixture.self, "uniforms.json")
        var bySeed: [UInt64: SeededUniforms] = [:]
        for c in fx.cases {
            var u = bySeed[c.seed] ?? SeededUniforms(seed: c.seed, semanticCount: 4096, codebookSize: 4096, fastBooks: 9)
            let (slow, fast) = u.next(step: c.step)
            bySeed[c.seed] = u
            XCTAssertEqual(slow.count, c.slow_shape.reduce(1, *))
            XCTAssertEqual(fast.count, c.fast_shape.reduce(1, *))
            XCTAssertEqual(Array(slow.prefix(c.slow_head.count)), c.slow_head, "seed \(c.seed) step \(c.step)")
            XCTAssertEqual(Array(fast.suffix(c.fast_tail.count)), c.fast_tail, "seed \(c.seed) step \(c.step)")
            XCTAssertEqual(Audio8Fixtures.sha256(slow), c.slow_sha256, "seed \(c.seed) step \(c.step)")
            XCTAssertEqual(Audio8Fixtures.sha256(fast), c.fast_sha256, "seed \(c.seed) step \(c.step)")
        }
    }

    func testRASWindowKeepsThePublishersFirstFrameQuirk() throws {
        let tables = try Audio8Fixtures.tables()
        for c in try Audio8Fixtures.json(Audio8FramesFixture.self, "frames.json").cases {
            var w = RASWindow(size: tables.frame.rasWindow)
            for (step, want) in c.windows.enumerated() {
                XCTAssertEqual(w.values, want, "\(c.name) step \(step)")
                w.advance(step: step, semantic: c.semantics[step])
            }
        }
    }

    func testFrameLoopDrivesTheGraphAsPython() async throws {
        let tables = try Audio8Fixtures.tables()
        let fx = try Audio8Fixtures.json(Audio8FramesFixture.self, "frames.json")
        XCTAssertEqual(fx.cases.map(\.name), ["eos", "budget", "eos_first"])
        for c in fx.cases {
            let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "frames/\(c.name)", calls: c.calls)
            let loop = Audio8FrameLoop(runner: runner, tables: tables)
            var u = SeededUniforms(seed: c.uniform_seed, semanticCount: 4096, codebookSize: 4096, fastBooks: 9)
            let r = try await loop.generate(prompt: .fixture(c.prompt), maxFrames: c.max_frames, uniforms: &u)
            XCTAssertTrue(runner.finished, c.name)
            XCTAssertEqual(r.frames.map(\.window), c.windows, c.name)
            XCTAssertEqual(r.frames.map(\.semantic), c.semantics, c.name)
            XCTAssertEqual(r.columns, Audio8Fixtures.columns(c.codes), c.name)
            XCTAssertEqual(r.finished, c.finished, c.name)
            XCTAssertEqual(r.prefillCalls, c.prefill_calls, c.name)
        }
    }

    func testCodecWindowsAndPaddingFramesAsPython() throws {
        let tables = try Audio8Fixtures.tables()
        let fx = try Audio8Fixtures.json(Audio8CodecFixture.self, "codec.json")
        for p in fx.plans {
            let got = try Audio8Codec.plan(total: p.total, window: p.window, context: p.context)
            XCTAssertEqual(got.map { [$0.start, $0.emitFrom, $0.emitTo] }, p.plan, "\(p.total)/\(p.window)/\(p.context)")
        }
        XCTAssertThrowsError(try Audio8Codec.plan(total: 3, window: 8, context: 8))
        let codec = try Audio8Codec(runner: Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "frames/eos", calls: []), tables: tables)
        XCTAssertEqual([codec.window, codec.context], [8, 2])
        var report = Audio8DecodeReport()
        let kept = codec.prepare(Audio8Fixtures.columns(fx.prepare.codes), report: &report)
        XCTAssertEqual(kept, Audio8Fixtures.columns(fx.prepare.kept))
        XCTAssertEqual(report.frames, fx.prepare.frames)
        XCTAssertEqual(report.dropped, fx.prepare.dropped)
        XCTAssertEqual(report.clampedByBook, fx.prepare.clamped_by_book)
    }

    func testPipelineReplayGivesPythonsCodesAndAudio() async throws {
        let all = try JSONDecoder().decode(
            [String: Audio8PipelineFixture].self, from: Data(contentsOf: Audio8Fixtures.url("pipeline.json")))
        XCTAssertEqual(all.keys.sorted(), ["plain_whole", "voice_stream"])
        for (name, fx) in all.sorted(by: { $0.key < $1.key }) {
            let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/\(name)", calls: fx.calls)
            let host = try Audio8Pipeline(runner: runner, tables: try Audio8Fixtures.tables())
            let voice = try fx.voice.map { try Audio8Voice.load(Audio8Fixtures.url("pipeline/\(name)/\($0)")) }
            var chunks = 0
            let (audio, pieces) = try await host.speak(
                pieces: fx.pieces.map(\.ids), voice: voice, seed: fx.seed, maxFrames: fx.max_frames, stream: fx.stream,
                onAudio: { _ in chunks += 1 })
            XCTAssertTrue(runner.finished, "\(name): the Swift host made fewer calls than Python")
            XCTAssertEqual(pieces.count, fx.pieces.count, name)
            for (got, want) in zip(pieces, fx.pieces) {
                XCTAssertEqual(got.promptColumns, want.prompt_columns, name)
                XCTAssertEqual(got.loop.columns, Audio8Fixtures.columns(want.codes), "\(name): codes")
                XCTAssertEqual(got.loop.finished, want.finished, name)
                XCTAssertEqual(got.audio.count, want.samples, name)
                XCTAssertEqual(got.decode.clamped, want.clamped, name)
                XCTAssertEqual(got.decode.windows, want.windows, name)
            }
            XCTAssertEqual(chunks, fx.stream ? fx.pieces.map(\.windows).reduce(0, +) : fx.pieces.count, name)
            let ref = try RawF32.read(Audio8Fixtures.url("pipeline/\(name)/\(fx.audio)"))
            XCTAssertEqual(audio.count, fx.audio_samples, name)
            XCTAssertEqual(audio, ref, "\(name): audio is the recorded windows' samples, bit for bit")
            let seconds = Double(audio.count) / Double(host.tables.codec.sampleRate)
            let hostMs = pieces.map(\.hostMilliseconds).reduce(0, +)
            print(String(format: "audio8 swift host (%@): %.2f ms host steps for %.3f s of audio (%.1f ms per audio second)",
                         name, hostMs, seconds, hostMs / seconds))
        }
    }

    func testAWrongSeedOrVoiceIsCaughtByTheRecording() async throws {
        let fx = try JSONDecoder().decode(
            [String: Audio8PipelineFixture].self, from: Data(contentsOf: Audio8Fixtures.url("pipeline.json")))["voice_stream"]!
        let voice = try Audio8Voice.load(Audio8Fixtures.url("pipeline/voice_stream/voice.npz"))
        let run = { (seed: Int, voice: Audio8Voice?) async throws in
            let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "pipeline/voice_stream", calls: fx.calls)
            let host = try Audio8Pipeline(runner: runner, tables: try Audio8Fixtures.tables())
            _ = try await host.speak(pieces: fx.pieces.map(\.ids), voice: voice, seed: seed, maxFrames: fx.max_frames, stream: true)
        }
        await assertNoThrowAsync({ try await run(fx.seed, voice) })
        await assertThrowsAsync({ try await run(fx.seed + 1, voice) }) { XCTAssertTrue("\($0)".contains("step 7: ar.frame input noise_fast"), "\($0)") }
        await assertThrowsAsync({ try await run(fx.seed, nil) }) { XCTAssertTrue("\($0)".contains("input codes"), "\($0)") }
    }

    func testBadInputIsAClearError() async throws {
        let tables = try Audio8Fixtures.tables()
        XCTAssertThrowsError(try Audio8Prompt.build(textIDs: [72, Int32(tables.tokens.vocabSize)], voice: nil, tables: tables)) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .user)
            XCTAssertTrue("\(e)".contains("token id \(tables.tokens.vocabSize) at position 1 is outside the vocabulary"), "\(e)")
        }
        XCTAssertThrowsError(try Audio8Prompt.build(textIDs: [], voice: nil, tables: tables)) { XCTAssertTrue("\($0)".contains("empty")) }
        XCTAssertThrowsError(try Audio8Voice.load(Audio8Fixtures.url("voice_no_ids.npz"))) { e in
            XCTAssertTrue("\(e)".contains("has no 'text_ids' array"), "\(e)")
        }
        let bad = try Audio8Voice(codes: [Int32](repeating: 4096, count: 10), books: 10, textIDs: [1])
        XCTAssertThrowsError(try Audio8Prompt.build(textIDs: [72], voice: bad, tables: tables)) { e in
            XCTAssertTrue("\(e)".contains("reference codes must lie in 0..4095"), "\(e)")
        }
        // the frame loop refuses a prompt + budget past the KV rows before any call
        let runner = try Audio8CheckedRunner(manifest: Audio8Fixtures.manifest(), folder: "frames/eos", calls: [])
        var u = SeededUniforms(seed: 0, semanticCount: 4096, codebookSize: 4096, fastBooks: 9)
        let p = try Audio8Prompt.build(textIDs: [72], voice: nil, tables: tables)
        await assertThrowsAsync({ try await Audio8FrameLoop(runner: runner, tables: tables).generate(prompt: p, maxFrames: 512, uniforms: &u) }) { e in
            XCTAssertTrue("\(e)".contains("KV rows, the graph holds 512"), "\(e)")
        }
        XCTAssertEqual(runner.position, 0)
        // a bundle without the Audio8 host table is refused by file name
        let other = try ModelBundle.open(FixtureFolder().url("bundle"))
        XCTAssertThrowsError(try Audio8Tables.load(try other.fileURL(Audio8Tables.fileName))) { e in
            XCTAssertTrue("\(e)".contains("audio8_host.json"), "\(e)")
        }
    }
}
