// CoreAIRunner against the Python runtime's answers on the same bundle: the Kokoro case of
// KokoroWorkerTests (the Python pipeline through `voxport`'s Session, kokoro_case.py) run by the
// Swift host over Apple's Core AI framework, CPU only. Compiled only where Core AI exists
// (.github/workflows/macos.yml runs `swift test --filter CoreAIRunner` there); never compiled
// on Linux, so expect small fixes on the first Mac build, as CoreAIRunner itself.
#if canImport(CoreAI)
    import Foundation
    import XCTest
    import VoxportCore
    import VoxportHost
    import VoxportRunner

    final class CoreAIRunnerParityTests: XCTestCase {
        func testKokoroThroughCoreAIGivesThePythonRuntimesWaveform() throws {
            let (dir, kase) = try KokoroWorkerTests.pythonCase()
            let bundle = try ModelBundle.open(URL(fileURLWithPath: kase.bundle))
            let files = try KokoroBundleFiles.load(bundle)
            let runner = try CoreAIRunner(bundle: bundle.url, options: .cpuOnly)
            defer { runner.close() }
            let host = try KokoroHost(runner: runner, vocab: files.vocab, source: files.source)
            host.foldNegativePi = true
            let voice = try files.voices.voice(kase.voice)
            var draws: [Int: SourceDraws] = [:]
            for c in kase.chunks { draws[c.seed] = try KokoroWorkerTests.draws(dir, seed: c.seed) }
            var chunks: [[Float]] = []
            for c in kase.chunks {
                chunks.append(
                    try host.speak(c.phonemes, voice: voice, noise: KokoroWorkerTests.Draws(bySeed: draws), seed: c.seed).audio)
            }
            let swift = KokoroAudio.join(chunks)
            let folded = try RawF32.read(dir.appendingPathComponent("folded.f32"))
            XCTAssertEqual(swift.count, folded.count)
            XCTAssertLessThanOrEqual(KokoroWorkerTests.relativeError(swift, folded), 1e-4)
        }
    }
#endif
