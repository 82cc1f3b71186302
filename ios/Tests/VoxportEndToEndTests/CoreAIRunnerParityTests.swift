// CoreAIRunner against WorkerRunner, model by model, on the reduced bundles: each model's
// Speaker (text to a chunk stream, over the worker classes' cases and runs) and each bench's pass
// (Chatterbox T3 prefill + decode over its KV state, the flow, HiFT; the
// int8 T3; the fp16 estimator; Audio8 prefill, the fused frame, the codec) through both runners,
// every graph call recorded. On Linux `CoreAI` is the package's mirror over the same Core AI
// runtime WorkerRunner's `voxport serve` runs, so the audio and every call's outputs must be equal
// bit for bit — while the mirror lays its arrays out padded, so a runner that copies as if they
// were flat fails (shown below). Where `CoreAI` is Apple's framework (macOS 27, CPU only) the
// numerics are another implementation's: the audio is held to 1e-4 of its peak instead
// (`.github/workflows/macos.yml` runs that; the sampled benches may diverge there, unproven).
#if canImport(CoreAI)
    import CoreAI
    import Foundation
    import XCTest
    import VoxportTestSupport
    import VoxportBench
    import VoxportCore
    import VoxportHost

    @testable import VoxportRunner

    @available(macOS 27.0, iOS 27.0, *)
    final class CoreAIRunnerParityTests: XCTestCase {
        static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "coreai_parity_case.py")

        struct Case: Decodable {
            struct Bundle: Decodable { let bundle: String }
            struct Chatterbox: Decodable {
                let bundle: String
                let int8_t3: String
                let fp16_estimator: String
                let ids: [Int]
            }
            struct Audio8: Decodable {
                let bundle: String
                let ids: [Int]
            }
            let kokoro: Bundle
            let chatterbox: Chatterbox
            let audio8: Audio8
        }

        nonisolated(unsafe) static var made: Result<Case, Error>?

        /// coreai_parity_case.py's bundles (made or reused once per test process).
        static func bundles() throws -> Case {
            if let made { return try made.get() }
            let result = Result { () throws -> Case in
                let out = try TestScratch.folder("parity").appendingPathComponent("case.json")
                try PythonChild.run(script, [out.path])
                return try JSONDecoder().decode(Case.self, from: Data(contentsOf: out))
            }
            made = result
            return try result.get()
        }

        /// What one bench pass did through one runner: its pass, and every graph call.
        struct Run {
            let pass: BenchPass
            let steps: [ReplayRunner.Step]
        }

        static func pass(_ bench: String, bundle: String, env extra: [String: String], runner: GraphRunner) async throws -> Run {
            let env = try BenchEnvironment(["VP_BENCH": bench, "VP_BUNDLE": bundle, "VP_PASSES": "0"].merging(extra) { $1 })
            let type = try BenchCatalog.type(named: bench)
            let opened = try ModelBundle.open(env.bundle, verify: false)
            let recorder = RecordingRunner(wrapping: runner)
            let pass = try await type.init(bundle: opened, runner: recorder, environment: env).pass(0)
            return Run(pass: pass, steps: recorder.steps)
        }

        /// `bench` through WorkerRunner and through CoreAIRunner (copying `copies`), compared.
        func parity(
            _ bench: String, bundle: String, env: [String: String] = [:], copies: CoreAIArrays.Copies = .strided
        ) async throws -> (worker: Run, coreai: Run) {
            let graphs = try BenchCatalog.type(named: bench).graphs
            let worker = try await WorkerRunner(bundle: URL(fileURLWithPath: bundle), graphs: graphs)
            addTeardownBlock { await worker.close() }
            let viaWorker = try await Self.pass(bench, bundle: bundle, env: env, runner: worker)
            await worker.close()
            let coreai = try CoreAIRunner(bundle: URL(fileURLWithPath: bundle), options: .cpuOnly, copies: copies)
            let viaCoreAI = try await Self.pass(bench, bundle: bundle, env: env, runner: coreai)
            await coreai.close()
            return (viaWorker, viaCoreAI)
        }

        /// The same audio and, call by call, the same graph outputs (bit for bit on the mirror).
        func assertSame(_ runs: (worker: Run, coreai: Run), _ what: String, file: StaticString = #filePath, line: UInt = #line) {
            let (w, c) = runs
            XCTAssertFalse(w.steps.isEmpty, "\(what): no graph ran", file: file, line: line)
            #if os(Linux)
                XCTAssertEqual(c.steps.count, w.steps.count, "\(what): graph calls", file: file, line: line)
                for (i, (a, b)) in zip(w.steps, c.steps).enumerated() {
                    XCTAssertEqual("\(b.graph).\(b.function)", "\(a.graph).\(a.function)", "\(what): call \(i)", file: file, line: line)
                    guard b.outputs == a.outputs else {
                        return XCTFail("\(what): call \(i) (\(a.graph).\(a.function)) answers differently through CoreAI", file: file, line: line)
                    }
                }
                XCTAssertEqual(c.pass.audio, w.pass.audio, "\(what): audio", file: file, line: line)
            #else
                XCTAssertEqual(c.pass.audio.count, w.pass.audio.count, "\(what): samples", file: file, line: line)
                XCTAssertLessThanOrEqual(
                    KokoroWorkerTests.relativeError(c.pass.audio, w.pass.audio), 1e-4, "\(what): audio", file: file, line: line)
            #endif
        }

        /// One Speaker's stream through both runners: on the mirror the same chunks (text,
        /// piece, samples) bit for bit and, call by call, the same graph outputs; on Apple's
        /// framework the same chunking and the audio within 1e-4 of its peak.
        func assertSameSpeech(
            worker: (chunks: [SpeechChunk], steps: [ReplayRunner.Step]), coreai: (chunks: [SpeechChunk], steps: [ReplayRunner.Step]),
            _ what: String, file: StaticString = #filePath, line: UInt = #line
        ) {
            XCTAssertGreaterThan(worker.chunks.count, 1, "\(what): one chunk proves little about a stream", file: file, line: line)
            let pass = { (chunks: [SpeechChunk]) in BenchPass(audio: chunks.flatMap(\.samples), audioSeconds: 0) }
            assertSame((Run(pass: pass(worker.chunks), steps: worker.steps), Run(pass: pass(coreai.chunks), steps: coreai.steps)), what,
                       file: file, line: line)
            XCTAssertEqual(coreai.chunks.map(\.text), worker.chunks.map(\.text), "\(what): chunk texts", file: file, line: line)
            XCTAssertEqual(coreai.chunks.map(\.piece), worker.chunks.map(\.piece), "\(what): pieces", file: file, line: line)
            XCTAssertEqual(coreai.chunks.map(\.samples.count), worker.chunks.map(\.samples.count), "\(what): chunk lengths",
                           file: file, line: line)
            #if os(Linux)
                XCTAssertEqual(coreai.chunks, worker.chunks, "\(what): the chunk stream", file: file, line: line)
            #endif
        }

        /// KokoroSpeaker on KokoroWorkerTests' case (Python's phonemes and draws): through
        /// CoreAIRunner against the same Speaker through the worker (that class's run).
        func testKokoroSpeakerThroughCoreAIIsTheWorkersSpeech() async throws {
            let (_, early) = try KokoroWorkerTests.early()
            let coreai = try CoreAIRunner(bundle: URL(fileURLWithPath: early.bundle))
            let viaCoreAI = try await KokoroWorkerTests.hostSpeech(coreai)
            await coreai.close()
            let viaWorker = try await KokoroWorkerTests.workerSpeech()
            XCTAssertGreaterThan(viaWorker.audio.count, 0)
            let pass = { (audio: [Float]) in BenchPass(audio: audio, audioSeconds: 0) }
            assertSame(
                (Run(pass: pass(viaWorker.audio), steps: viaWorker.steps), Run(pass: pass(viaCoreAI.audio), steps: viaCoreAI.steps)),
                "kokoro speaker")
            // "Hello there." is one chunk: the stream's equality is the audio's.
            #if os(Linux)
                XCTAssertEqual(viaCoreAI.chunks, viaWorker.chunks, "kokoro speaker: the chunk stream")
            #endif
        }

        /// ChatterboxSpeaker on ChatterboxWorkerTests' case (its text, Python's recorded draws,
        /// two chunks) through CoreAIRunner against the same Speaker through that class's worker.
        func testChatterboxSpeakerThroughCoreAIIsTheWorkersSpeech() async throws {
            let bundle = try await ChatterboxWorkerTests.pythonCase().bundle.url
            XCTAssertEqual(bundle.standardizedFileURL.path, URL(fileURLWithPath: try Self.bundles().chatterbox.bundle).standardizedFileURL.path)
            let coreai = try CoreAIRunner(bundle: bundle)
            let viaCoreAI = try await ChatterboxWorkerTests.speakerSpeech(coreai)
            await coreai.close()
            assertSameSpeech(worker: try await ChatterboxWorkerTests.workerSpeech(), coreai: viaCoreAI, "chatterbox speaker")
        }

        /// Audio8Speaker on Audio8WorkerTests' case (its text and seed, streamed) through
        /// CoreAIRunner against the same Speaker through that class's worker.
        func testAudio8SpeakerThroughCoreAIIsTheWorkersSpeech() async throws {
            let bundle = try Audio8WorkerTests.pythonCase().bundle.url
            let coreai = try CoreAIRunner(bundle: bundle)
            let viaCoreAI = try await Audio8WorkerTests.speakerSpeech(coreai)
            await coreai.close()
            assertSameSpeech(worker: try await Audio8WorkerTests.workerSpeech(), coreai: viaCoreAI, "audio8 speaker")
        }

        /// T3 (prefill, decode over the KV state, CFG, sampling), the flow encoder, the fp32
        /// estimator's Euler loop and HiFT, through the whole host.
        func testChatterboxSpeakThroughCoreAIIsTheWorkersSpeech() async throws {
            let c = try Self.bundles().chatterbox
            let runs = try await parity(
                "chatterbox.speak", bundle: c.bundle, env: ["VP_TOKENS": Self.ids(c.ids), "VP_SEED": "1", "VP_MAX_TOKENS": "16"])
            let graphs = Set(runs.worker.steps.map(\.graph))
            for graph in [T3Decoder.graph, FlowSolver.encoderGraph, FlowSolver.estimatorGraph, HiftVocoder.f0Graph, HiftVocoder.trunkGraph] {
                XCTAssertTrue(graphs.contains(graph), "\(graph) did not run: \(graphs)")
            }
            XCTAssertTrue(runs.worker.steps.contains { $0.graph == T3Decoder.graph && $0.function == "decode" })
            assertSame(runs, "chatterbox.speak")
        }

        func testChatterboxInt8T3ThroughCoreAIIsTheWorkers() async throws {
            let c = try Self.bundles().chatterbox
            XCTAssertEqual(try ModelBundle.open(URL(fileURLWithPath: c.int8_t3), verify: false).manifest.graphs["t3"]?.precision, "int8")
            let runs = try await parity(
                "chatterbox.t3", bundle: c.int8_t3, env: ["VP_TOKENS": Self.ids(c.ids), "VP_SEED": "1", "VP_MAX_TOKENS": "8"])
            assertSame(runs, "chatterbox.t3 (int8)")
        }

        /// One call of the fp16 estimator (float16 inputs and outputs; emulated slowly on Linux,
        /// so one call, on made-up but identical inputs).
        func testChatterboxFp16EstimatorThroughCoreAIIsTheWorkers() async throws {
            let path = try Self.bundles().chatterbox.fp16_estimator
            let bundle = try ModelBundle.open(URL(fileURLWithPath: path), verify: false)
            let graph = FlowSolver.estimatorGraph
            let entry = try XCTUnwrap(bundle.manifest.graphs[graph])
            XCTAssertEqual(entry.precision, "fp16")
            let function = try XCTUnwrap(entry.functions.keys.sorted().first)
            let spec = try bundle.manifest.function(graph: graph, function: function)
            XCTAssertTrue(spec.inputs.contains { $0.dtype == "float16" }, "\(spec.inputs)")
            var inputs: [String: Tensor] = [:]
            for (k, input) in spec.inputs.enumerated() {
                let n = (input.shape ?? []).reduce(1, *)
                inputs[input.name] = Tensor(shape: input.shape ?? [], storage: .float32((0..<n).map { Float(sin(Double($0 * 7 + k))) }))
            }
            let worker = try await WorkerRunner(bundle: bundle.url, graphs: [graph])
            addTeardownBlock { await worker.close() }
            let w = try await worker.run(graph: graph, function: function, inputs: inputs)
            await worker.close()
            let coreai = try CoreAIRunner(bundle: bundle.url)
            let c = try await coreai.run(graph: graph, function: function, inputs: inputs)
            await coreai.close()
            XCTAssertEqual(Set(c.keys), Set(w.keys))
            #if os(Linux)
                XCTAssertEqual(c, w, "the fp16 estimator answers differently through CoreAI")
            #else
                for (k, v) in w {
                    XCTAssertLessThanOrEqual(KokoroWorkerTests.relativeError(try c[k]!.float32(), try v.float32()), 1e-2, k)
                }
            #endif
        }

        /// Prefill over the KV state, the fused frame (its sampler inside), the codec; and on
        /// Linux the fault the mirror's padded layouts exist to catch: a runner that fills and
        /// reads Core AI arrays as flat buffers says something else (on a device perhaps only on
        /// a GPU or the Neural Engine, or not at all).
        func testAudio8SpeakThroughCoreAIIsTheWorkersSpeech() async throws {
            let a = try Self.bundles().audio8
            let env = ["VP_TOKENS": Self.ids(a.ids), "VP_SEED": "3", "VP_MAX_FRAMES": "40"]
            let runs = try await parity("audio8.speak", bundle: a.bundle, env: env)
            for graph in ["ar", "codec"] {
                XCTAssertTrue(runs.worker.steps.contains { $0.graph == graph }, graph)
            }
            assertSame(runs, "audio8.speak")
            #if os(Linux)
                let flat = try CoreAIRunner(bundle: URL(fileURLWithPath: a.bundle), options: .cpuOnly, copies: .flat)
                let blind = try await Self.pass("audio8.speak", bundle: a.bundle, env: env, runner: flat)
                await flat.close()
                XCTAssertNotEqual(blind.pass.audio, runs.worker.pass.audio, "a stride-blind runner speaks the same")
                let differs = runs.worker.steps.indices.first { i in
                    i >= blind.steps.count || blind.steps[i].outputs != runs.worker.steps[i].outputs
                }
                XCTAssertNotNil(differs)
            #endif
        }

        #if os(Linux)
            /// `voxport-bench` on `VP_RUNNER=coreai` here: the mirror, and result.json says so.
            func testBenchOnCoreAISaysWhichRuntimeRan() async throws {
                let a = try Self.bundles().audio8
                let out = try TestScratch.folder("parity-bench")
                let env = try BenchEnvironment([
                    "VP_BENCH": "audio8.speak", "VP_BUNDLE": a.bundle, "VP_RUNNER": "coreai", "VP_PASSES": "0",
                    "VP_TOKENS": Self.ids(a.ids), "VP_MAX_FRAMES": "8", "VP_OUT": out.path,
                ])
                let result = try await BenchDriver.run(env)
                XCTAssertEqual(result["runner"] as? String, "coreai")
                XCTAssertTrue((result["runtime"] as? String)?.hasPrefix("coreai-mirror") ?? false, "\(result["runtime"] ?? "none")")
                XCTAssertGreaterThan(result["calls_per_pass"] as? Int ?? 0, 0)
            }
        #endif

        static func ids(_ ids: [Int]) -> String { ids.map(String.init).joined(separator: ",") }
    }
#endif
