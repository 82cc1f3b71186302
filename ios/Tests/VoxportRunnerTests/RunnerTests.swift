import Foundation
import VoxportCore
import VoxportWorker  // monotonicSeconds()
import XCTest
import VoxportTestSupport

@testable import VoxportRunner

/// The repository this package lives in, and its Python venv (the real runtime's only way in):
/// `PythonChild`'s, the one every test target uses.
enum Repo {
    static let root = PythonChild.repo
    static let python = PythonChild.python
    static let voxport = PythonChild.voxport
    static let here = root.appendingPathComponent("ios/Tests/VoxportRunnerTests")
}

/// The self-test bundle and a Python Session's answers on it, made once per test process by
/// `make_recording.py` through the project's venv (a missing venv fails, with the fix).
final class PythonReference: Sendable {
    static let shared = Result { try PythonReference() }

    let dir: URL
    var bundle: URL { dir.appendingPathComponent("bundle") }
    var recording: URL { dir.appendingPathComponent("recording") }
    let mlp: NpzArchive
    /// The in-process Session's median ms per call, by "graph.function".
    let sessionMilliseconds: [String: Double]

    private init() throws {
        do {
            try PythonChild.checkVenv()
        } catch {
            throw RunnerError(.launch, "\(error)")
        }
        // This process's scratch folder, removed when it exits (TestScratch).
        dir = try TestScratch.folder("runner-\(UUID().uuidString.prefix(8))")
        do {
            try PythonChild.run(Repo.here.appendingPathComponent("make_recording.py"), [dir.path])
        } catch {
            throw RunnerError(.launch, "\(error)")
        }
        mlp = try NpzArchive.load(dir.appendingPathComponent("mlp.npz"))
        let timing = try JSONDecoder().decode([String: Double].self, from: Data(contentsOf: dir.appendingPathComponent("timing.json")))
        sessionMilliseconds = timing
    }

    static func get() throws -> PythonReference { try shared.get() }

    func worker(timeout: Double? = 600) async throws -> WorkerRunner {
        try await WorkerRunner(bundle: bundle, executable: Repo.voxport, timeout: timeout)
    }

    /// A script standing in for `voxport serve` (fake_worker.py in `mode`).
    func fakeWorker(_ mode: String) throws -> URL {
        let url = dir.appendingPathComponent("fake-\(mode).sh")
        let script = "#!/bin/sh\nexec '\(Repo.python.path)' '\(Repo.here.appendingPathComponent("fake_worker.py").path)' \(mode) \"$@\"\n"
        try script.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }
}

private func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s[s.count / 2]
}

final class WorkerRunnerTests: XCTestCase {
    func testDescribesTheBundleAndKeepsServingAfterAnInputError() async throws {
        let ref = try PythonReference.get()
        let runner = try await ref.worker()
        addTeardownBlock { await runner.close() }
        XCTAssertEqual(runner.manifest.model, "core")
        XCTAssertEqual(runner.manifest.graphs.keys.sorted(), ["decoder", "mlp"])
        let onDisk = try ModelBundle.open(ref.bundle).manifest
        XCTAssertEqual(runner.manifest.graphs["mlp"]?.sha256, onDisk.graphs["mlp"]?.sha256)

        let x = try ref.mlp.array("x")
        let y = try await runner.run(graph: "mlp", function: "main", inputs: ["x": x])["y"]
        XCTAssertEqual(y, try ref.mlp.array("y"))

        let short = Tensor(shape: [3, 256], storage: .float32([Float](repeating: 0, count: 768)))
        await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: ["x": short]) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .inputSpec)
            XCTAssertEqual(e?.type, "InputSpecError")
            XCTAssertTrue(e?.message.contains("shape [3, 256], the graph wants [8, 256]") ?? false, "\(error)")
        }
        await assertThrowsAsync({ try await runner.run(graph: "nope", function: "main", inputs: [:]) }) { error in
            XCTAssertEqual((error as? RunnerError)?.kind, .user)
            XCTAssertTrue("\(error)".contains("no graph 'nope'"), "\(error)")
        }
        // Still serving, still exact.
        XCTAssertTrue(runner.isAlive)
        let again = try await runner.run(graph: "mlp", function: "main", inputs: ["x": x])["y"]
        XCTAssertEqual(again, try ref.mlp.array("y"))
        await runner.close()
        XCTAssertFalse(runner.isAlive)
        await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: ["x": x]) }) { error in
            XCTAssertEqual((error as? RunnerError)?.kind, .closed)
        }
    }

    /// Prefill, then greedy decode steps with the state kept in the worker: every output equals
    /// the Python Session's bit for bit, and the host's argmax picks the recorded tokens.
    func testStatefulDecodeThroughTheWorkerEqualsThePythonSession() async throws {
        let ref = try PythonReference.get()
        let steps = try ReplayRunner(recording: ref.recording).steps
        XCTAssertEqual(steps.map(\.function), ["prefill"] + Array(repeating: "decode", count: steps.count - 1))
        let runner = try await ref.worker()
        addTeardownBlock { await runner.close() }
        let recorder = RecordingRunner(wrapping: runner)
        try await recorder.resetState(graph: "decoder")
        var previous: [Float]? = nil
        for (i, step) in steps.enumerated() {
            if let previous {  // the token fed is the argmax of the last row before it
                let vocab = 64
                let last = Array(previous.suffix(vocab))
                let argmax = last.indices.max { last[$0] < last[$1] }!
                XCTAssertEqual(try step.inputs["tokens"]!.int32(), [Int32(argmax)], "step \(i)")
            }
            let out = try await recorder.run(graph: "decoder", function: step.function, inputs: step.inputs)
            XCTAssertEqual(out.keys.sorted(), ["logits"])
            XCTAssertEqual(out["logits"], step.outputs["logits"], "step \(i) (\(step.function)) differs from the Python Session")
            previous = try out["logits"]!.float32()
        }
        let state = try await runner.readState(graph: "decoder")
        XCTAssertEqual(state.count, 4)  // k and v caches of two layers
        XCTAssertEqual(state["layers_0_k_cache"]?.shape, [1, 4, 32, 16])

        // What went through the worker replays without it.
        let replay = recorder.replay()
        for step in steps {
            let replayed = try await replay.run(graph: "decoder", function: step.function, inputs: step.inputs)
            XCTAssertEqual(replayed, step.outputs)
        }
        XCTAssertEqual(replay.remaining, 0)

        // After a reset the same prefill gives the same logits again.
        try await runner.resetState(graph: "decoder")
        let cleared = try await runner.readState(graph: "decoder")
        XCTAssertEqual(cleared.count, 0)
        let again = try await runner.run(graph: "decoder", function: "prefill", inputs: steps[0].inputs)
        XCTAssertEqual(again["logits"], steps[0].outputs["logits"])
        await runner.close()
    }

    /// WorkerRunner's cost per call against an in-process Python Session on the same function.
    /// Printed, never asserted (the machine is shared).
    func testOverheadPerCall() async throws {
        let ref = try PythonReference.get()
        let runner = try await ref.worker()
        addTeardownBlock { await runner.close() }
        let x = try ref.mlp.array("x")
        let feed: [String: Tensor] = [
            "tokens": Tensor(shape: [1, 1], storage: .int32([1])), "start": Tensor(shape: [1], storage: .int32([20])),
        ]
        for (key, graph, function, inputs) in [("mlp.main", "mlp", "main", ["x": x]), ("decoder.decode", "decoder", "decode", feed)] {
            _ = try await runner.run(graph: graph, function: function, inputs: inputs, state: "timing")
            var wall: [Double] = []
            var server: [Double] = []
            for _ in 0..<50 {
                let t0 = monotonicSeconds()
                _ = try await runner.run(graph: graph, function: function, inputs: inputs, state: "timing")
                wall.append((monotonicSeconds() - t0) * 1e3)
                server.append(runner.lastServerMilliseconds ?? .nan)
            }
            let session = ref.sessionMilliseconds[key] ?? .nan
            let line = String(
                format: "WorkerRunner %@: %.3f ms per call (worker's own %.3f ms); in-process Session %.3f ms; overhead %.3f ms",
                key, median(wall), median(server), session, median(wall) - session)
            print(line)
            XCTAssertGreaterThan(wall.count, 0)
        }
        await runner.close()
    }

    func testStartErrorsAreClear() async throws {
        let ref = try PythonReference.get()
        let nowhere = ref.dir.appendingPathComponent("nowhere")
        await assertThrowsAsync({ try await WorkerRunner(bundle: nowhere, executable: Repo.voxport) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .user)
            XCTAssertTrue(e?.message.contains("no bundle at") ?? false, "\(error)")
            XCTAssertTrue(e?.message.contains("exit code 2") ?? false, "\(error)")
        }
        await assertThrowsAsync({
            try await WorkerRunner(bundle: ref.bundle, executable: ref.dir.appendingPathComponent("no-such-voxport"))
        }) { error in
            XCTAssertEqual((error as? RunnerError)?.kind, .launch)
        }
        // The executable: VOXPORT, else the venv above the bundle or the working directory.
        XCTAssertEqual(
            WorkerRunner.findExecutable(near: nowhere, environment: ["VOXPORT": "/opt/vp"])?.path, "/opt/vp")
        let inRepo = Repo.root.appendingPathComponent("ios/Tests/Fixtures/bundle")
        XCTAssertEqual(
            WorkerRunner.findExecutable(near: inRepo, environment: [:])?.standardizedFileURL.path,
            Repo.voxport.standardizedFileURL.path)
    }

    func testAHungWorkerTimesOut() async throws {
        let ref = try PythonReference.get()
        let runner = try await WorkerRunner(bundle: ref.bundle, executable: try ref.fakeWorker("hang"), timeout: 1)
        addTeardownBlock { await runner.close() }
        let x = try ref.mlp.array("x")
        let start = monotonicSeconds()
        await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: ["x": x]) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .timeout)
            XCTAssertTrue(e?.message.contains("within 1 s in graph 'mlp' function 'main'") ?? false, "\(error)")
        }
        XCTAssertLessThan(monotonicSeconds() - start, 30)
        XCTAssertFalse(runner.isAlive)
        await runner.close()
    }

    func testAWorkerAbortIsARuntimeCrashNamingTheGraph() async throws {
        let ref = try PythonReference.get()
        let runner = try await WorkerRunner(bundle: ref.bundle, executable: try ref.fakeWorker("abort"))
        addTeardownBlock { await runner.close() }
        let x = try ref.mlp.array("x")
        await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: ["x": x]) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .runtimeCrash)
            let m = e?.message ?? ""
            XCTAssertTrue(m.contains("graph 'mlp' function 'main' (killed by SIGABRT)"), m)
            XCTAssertTrue(m.contains("fake worker: abort in mlp.main"), m)  // its last words
        }
        await runner.close()
    }
}

final class ReplayRunnerTests: XCTestCase {
    func testPassesOnTheRecordingAndFailsOnAChangedInput() async throws {
        let ref = try PythonReference.get()
        let replay = try ReplayRunner(recording: ref.recording)
        XCTAssertEqual(replay.manifest.model, "core")
        for step in replay.steps {
            let replayed = try await replay.run(graph: step.graph, function: step.function, inputs: step.inputs)
            XCTAssertEqual(replayed, step.outputs)
        }
        await assertThrowsAsync({ try await replay.run(graph: "decoder", function: "decode", inputs: [:]) }) { error in
            XCTAssertEqual((error as? RunnerError)?.kind, .replayMismatch)
            XCTAssertTrue("\(error)".contains("the recording has only 7 calls"), "\(error)")
        }

        // A different token at the third call: integers must match exactly.
        let changed = try ReplayRunner(recording: ref.recording)
        var inputs = changed.steps[2].inputs
        let token = try inputs["tokens"]!.int32()[0]
        inputs["tokens"] = Tensor(shape: [1, 1], storage: .int32([token + 1]))
        for step in changed.steps.prefix(2) {
            _ = try await changed.run(graph: step.graph, function: step.function, inputs: step.inputs)
        }
        await assertThrowsAsync({ try await changed.run(graph: "decoder", function: "decode", inputs: inputs) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .replayMismatch)
            XCTAssertTrue(
                e?.message.contains("call 3 (decoder.decode): input 'tokens' differs from the recording") ?? false,
                "\(error)")
            XCTAssertTrue(e?.message.contains("integers must match exactly") ?? false, "\(error)")
        }
        XCTAssertEqual(changed.position, 2)

        // int64 inputs compare by value with the recorded int32.
        let widened = try ReplayRunner(recording: ref.recording)
        let first = widened.steps[0]
        let tokens64 = Tensor(shape: [1, 8], storage: .int64(try first.inputs["tokens"]!.int32().map(Int64.init)))
        _ = try await widened.run(
            graph: "decoder", function: "prefill", inputs: ["tokens": tokens64, "start": first.inputs["start"]!])

        // Out of order: the recording starts with prefill.
        let order = try ReplayRunner(recording: ref.recording)
        await assertThrowsAsync({ try await order.run(graph: "decoder", function: "decode", inputs: replay.steps[1].inputs) }) {
            error in
            XCTAssertTrue("\(error)".contains("the recording has decoder.prefill"), "\(error)")
        }
    }

    func testFloatInputsWithinTheStepTolerance() async throws {
        let ref = try PythonReference.get()
        let manifest = try ModelBundle.open(ref.bundle).manifest
        let x = try ref.mlp.array("x")
        let y = try ref.mlp.array("y")
        func nudged(_ by: Float) throws -> Tensor {
            var v = try x.float32()
            v[17] += by
            return Tensor(shape: x.shape, storage: .float32(v))
        }
        let step = ReplayRunner.Step(graph: "mlp", function: "main", inputs: ["x": x], outputs: ["y": y], tolerance: 1e-3)
        let within = ReplayRunner(manifest: manifest, steps: [step])
        let withinY = try await within.run(graph: "mlp", function: "main", inputs: ["x": try nudged(5e-4)])["y"]
        XCTAssertEqual(withinY, y)
        let beyond = ReplayRunner(manifest: manifest, steps: [step])
        let far = try nudged(2e-3)
        await assertThrowsAsync({ try await beyond.run(graph: "mlp", function: "main", inputs: ["x": far]) }) { error in
            let e = error as? RunnerError
            XCTAssertEqual(e?.kind, .replayMismatch)
            XCTAssertTrue(e?.message.contains("element 17") ?? false, "\(error)")
            XCTAssertTrue(e?.message.contains("> tolerance 0.001") ?? false, "\(error)")
        }
        let exact = ReplayRunner(manifest: manifest, steps: [ReplayRunner.Step(graph: "mlp", function: "main", inputs: ["x": x], outputs: ["y": y])])
        let near = try nudged(1e-6)
        await assertThrowsAsync({ try await exact.run(graph: "mlp", function: "main", inputs: ["x": near]) })
        let shape = ReplayRunner(manifest: manifest, steps: [step])
        let short = Tensor(shape: [3, 256], storage: .float32([Float](repeating: 0, count: 768)))
        await assertThrowsAsync({ try await shape.run(graph: "mlp", function: "main", inputs: ["x": short]) }) { error in
            XCTAssertTrue("\(error)".contains("shape [3, 256], recorded [8, 256]"), "\(error)")
        }
    }
}

final class WorkerFramesTests: XCTestCase {
    func testHalfToFloatIsExact() {
        XCTAssertEqual(WorkerFrames.halfToFloat(0x3c00), 1)
        XCTAssertEqual(WorkerFrames.halfToFloat(0xc000), -2)
        XCTAssertEqual(WorkerFrames.halfToFloat(0x7bff), 65504)
        XCTAssertEqual(WorkerFrames.halfToFloat(0x0001), Float(sign: .plus, exponent: -24, significand: 1))
        XCTAssertEqual(WorkerFrames.halfToFloat(0x8000).sign, .minus)
        XCTAssertEqual(WorkerFrames.halfToFloat(0x7c00), .infinity)
        XCTAssertTrue(WorkerFrames.halfToFloat(0x7e00).isNaN)
    }
}
