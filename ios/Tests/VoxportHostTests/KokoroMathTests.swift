import XCTest
import VoxportCore
import VoxportHost

final class KokoroMathTests: XCTestCase {
    func testVoiceRowsAndBlendsMatchPython() throws {
        let fx = try KokoroFixtures.json(VoicesFixture.self, "voices.json")
        var packs: [String: VoicePack] = [:]
        for (k, name) in fx.packs.enumerated() { packs[name] = try KokoroFixtures.formulaPack(k) }
        let library = VoiceLibrary(packs: packs)
        XCTAssertEqual(fx.cases.count, 25)
        for c in fx.cases {
            let got = try library.voice(c.spec).row(nPhonemes: c.n_phonemes)
            XCTAssertEqual(bitwiseMismatches(got, try KokoroFixtures.f32(c.row)), [], "\(c.spec) row \(c.n_phonemes)")
        }
        XCTAssertThrowsError(try library.voice("va,nope"))
        XCTAssertThrowsError(try library.voice("va:1,vb"))
        XCTAssertThrowsError(try library.voice(" "))
    }

    func testDurationsAndAlignmentMatchPython() throws {
        let fx = try KokoroFixtures.json(DurationsFixture.self, "durations.json")
        let d = try KokoroFixtures.f32(fx.durations)
        for c in fx.cases {
            XCTAssertEqual(try Durations.predDurations(d, speed: c.speed), c.pred_dur, "speed \(c.speed)")
        }
        XCTAssertThrowsError(try Durations.predDurations(d, speed: 0))
        let p = fx.padded
        let (aln, mask) = try Durations.paddedAlignment(p.pred_dur, tokens: p.tokens, frames: p.frames)
        XCTAssertEqual(aln, try KokoroFixtures.f32(p.aln))
        XCTAssertEqual(mask, try KokoroFixtures.f32(p.frame_mask))
        XCTAssertThrowsError(try Durations.paddedAlignment(p.pred_dur, tokens: p.tokens, frames: p.frames - 6)) { e in
            XCTAssertEqual((e as? VoxportError)?.kind, .bucketOverflow)
        }
    }

    func source(_ fx: SourceFixture) throws -> HarmonicSource {
        try HarmonicSource(weight: try KokoroFixtures.f32(fx.l_linear_weight), bias: try KokoroFixtures.f32(fx.l_linear_bias)[0])
    }

    func testHarmonicSourcePhasesAreBitwise() throws {
        let fx = try KokoroFixtures.json(SourceFixture.self, "source.json")
        let phases = try source(fx).phases(f0: try KokoroFixtures.f32(fx.F0), randIni: try KokoroFixtures.f32(fx.rand_ini))
        let want = try KokoroFixtures.f32(fx.phase)
        XCTAssertEqual(phases.count, fx.samples * 9)
        XCTAssertEqual(bitwiseMismatches(phases, want), [])
    }

    func testHarmonicSourceMatchesPython() throws {
        let fx = try KokoroFixtures.json(SourceFixture.self, "source.json")
        let src = try source(fx)
        let draws = SourceDraws(randIni: try KokoroFixtures.f32(fx.rand_ini), sineNoise: try KokoroFixtures.f32(fx.sine_noise))
        let f0 = try KokoroFixtures.f32(fx.F0)
        let exc = try src.excitation(f0: f0, draws: draws)
        let wantExc = try KokoroFixtures.f32(fx.excitation)
        XCTAssertLessThanOrEqual(relativeError(exc, wantExc), 1e-5)
        let wantHar = try KokoroFixtures.f32(fx.har)
        let bins = fx.har_shape[1] / 2, frames = fx.har_shape[2]
        // The STFT alone, on Python's excitation, then the whole chain.
        for (name, input) in [("python source", wantExc), ("swift source", exc)] {
            let (har, n) = try src.spectrum(input)
            XCTAssertEqual(n, frames)
            let err = harError(har, wantHar, bins: bins, frames: frames)
            XCTAssertLessThanOrEqual(err.magnitude, 1e-5, name)
            XCTAssertLessThanOrEqual(err.phase, 1e-3, name)
        }
        XCTAssertThrowsError(try src.excitation(f0: f0, draws: SourceDraws(randIni: draws.randIni, sineNoise: [])))
    }

    func testTrimPadAndJoin() {
        XCTAssertEqual(KokoroAudio.trim([Float](repeating: 1, count: 2000), frames: 2).count, 1200)
        let joined = KokoroAudio.join([[1, 2], [3]], sampleRate: 10, pause: 0.25)  // 2.5 -> 2 (half to even)
        XCTAssertEqual(joined, [1, 2, 0, 0, 3])
        XCTAssertEqual(KokoroAudio.join([]), [])
        XCTAssertEqual(KokoroAudio.join([[1], [2]]).count, 2 + 4800)
        let padded = KokoroAudio.padHar([1, 2, 3, 4], rows: 2, frames: 2, bucketFrames: 1, hop: 300)
        XCTAssertEqual(padded, [1, 2, 0, 3, 4, 0])
    }
}
