// CoreAIRunner, and Core AI's Swift API beneath it, on the self-test bundle against the Python
// Session's recorded answers (make_recording.py): the same runtime beneath, so bit for bit. On
// Linux `CoreAI` is the package's mirror over `voxport serve --assets`; on an Apple device with
// Core AI it is Apple's framework (the CPU-only option), where these comparisons would need a
// tolerance: they are Linux-only as written (`#if os(Linux)`), and the device's parity is the
// end-to-end CoreAIRunnerParityTests' job.
#if canImport(CoreAI) && os(Linux)
    import CoreAI
    import Foundation
    import VoxportCore
    import XCTest
    import VoxportTestSupport

    @testable import CoreAI
    @testable import VoxportRunner

    final class CoreAIRunnerTests: XCTestCase {
        func runner(_ ref: PythonReference, copies: CoreAIArrays.Copies = .strided) throws -> CoreAIRunner {
            try CoreAIRunner(bundle: ref.bundle, options: .cpuOnly, copies: copies)
        }

        /// Prefill then greedy decode with the KV state owned by the runner (states in place,
        /// padded layouts): every output equals the Python Session's bit for bit, and no state
        /// array was copied on the way (copy-on-write would copy the cache on every call).
        func testStatefulDecodeEqualsThePythonSessionWithoutCopyingTheState() async throws {
            let ref = try PythonReference.get()
            let steps = try ReplayRunner(recording: ref.recording).steps
            let runner = try runner(ref)
            let copiesBefore = NDArray.storageCopies.load(ordering: .relaxed)
            for (i, step) in steps.enumerated() {
                let out = try await runner.run(graph: "decoder", function: step.function, inputs: step.inputs)
                XCTAssertEqual(out["logits"], step.outputs["logits"], "step \(i) (\(step.function))")
            }
            XCTAssertEqual(NDArray.storageCopies.load(ordering: .relaxed), copiesBefore, "a state array was copied")
            // A reset state starts the sequence again.
            try await runner.resetState(graph: "decoder")
            let again = try await runner.run(graph: "decoder", function: "prefill", inputs: steps[0].inputs)
            XCTAssertEqual(again["logits"], steps[0].outputs["logits"])
            // Another state key is another sequence: its prefill is the first one too.
            let other = try await runner.run(graph: "decoder", function: "prefill", inputs: steps[0].inputs, state: "b")
            XCTAssertEqual(other["logits"], steps[0].outputs["logits"])
            await runner.close()
        }

        func testStatelessCallEqualsThePythonSession() async throws {
            let ref = try PythonReference.get()
            let runner = try runner(ref)
            let y = try await runner.run(graph: "mlp", function: "main", inputs: ["x": try ref.mlp.array("x")])["y"]
            XCTAssertEqual(y, try ref.mlp.array("y"))
            await runner.close()
        }

        /// The fault the mirror's padded layouts exist to catch: copies that ignore the strides
        /// give other numbers (on a device, only on a GPU or the Neural Engine, or not at all).
        func testAStrideBlindCopyIsCaught() async throws {
            let ref = try PythonReference.get()
            let runner = try runner(ref, copies: .flat)
            let y = try await runner.run(graph: "mlp", function: "main", inputs: ["x": try ref.mlp.array("x")])["y"]
            XCTAssertNotEqual(y, try ref.mlp.array("y"))
            await runner.close()
        }

        func testBadCallsAreClearErrors() async throws {
            let ref = try PythonReference.get()
            let runner = try runner(ref)
            let short = Tensor(shape: [3, 256], storage: .float32([Float](repeating: 0, count: 768)))
            await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: ["x": short]) }) { error in
                XCTAssertEqual((error as? RunnerError)?.kind, .inputSpec)
                XCTAssertTrue("\(error)".contains("shape [3, 256], the graph wants [8, 256]"), "\(error)")
            }
            await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: [:]) }) { error in
                XCTAssertEqual((error as? RunnerError)?.kind, .inputSpec)
                XCTAssertTrue("\(error)".contains("missing input 'x'"), "\(error)")
            }
            await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "nope", inputs: [:]) }) { error in
                XCTAssertTrue("\(error)".contains("nope"), "\(error)")
            }
            await runner.close()
            await assertThrowsAsync({ try await runner.run(graph: "mlp", function: "main", inputs: [:]) }) { error in
                XCTAssertEqual((error as? RunnerError)?.kind, .closed)
            }
        }

        /// Core AI's own rules, through the mirror: every state needs a view, the scalar type
        /// must match, returned outputs are contiguous, states are written through their strides.
        func testTheFunctionEnforcesCoreAIsRules() async throws {
            let ref = try PythonReference.get()
            let model = try await AIModel(contentsOf: ref.bundle.appendingPathComponent("decoder.aimodel"), options: .cpuOnly)
            XCTAssertEqual(model.functionNames.sorted(), ["decode", "prefill"])
            let fn = try XCTUnwrap(try model.loadFunction(named: "prefill"))
            XCTAssertNil(try model.loadFunction(named: "nope"))
            let steps = try ReplayRunner(recording: ref.recording).steps
            let tokens = NDArray(scalars: try steps[0].inputs["tokens"]!.int32(), shape: [1, 8])
            let start = NDArray(scalars: [Int32(0)], shape: [1])
            await assertThrowsAsync({ _ = try await fn.run(inputs: ["tokens": tokens, "start": start]) }) { error in
                XCTAssertTrue("\(error)".contains("every state must be given a mutable view"), "\(error)")
            }
            let floatTokens = NDArray(scalars: [Float](repeating: 1, count: 8), shape: [1, 8])
            var states = try fn.descriptor.stateNames.map { name -> NDArray in
                guard case .ndArray(let d)? = fn.descriptor.stateDescriptor(of: name) else { throw RunnerError(.runtime, name) }
                var a = NDArray(descriptor: d)
                var v = a.mutableView(as: Float.self)
                v.copyElements(fromContentsOf: [Float](repeating: 0, count: d.shape.reduce(1, *)))
                return a
            }
            do {
                var all = InferenceFunction.MutableViews()
                for i in states.indices {
                    all.insert(_overrideLifetime(states[i].mutableRawView(), borrowing: Void()), for: fn.descriptor.stateNames[i])
                }
                _ = try await fn.run(inputs: ["tokens": floatTokens, "start": start], states: consume all)
                XCTFail("float tokens for an int32 input were accepted")
            } catch {
                XCTAssertTrue("\(error)".contains("is .float32, the function wants .int32"), "\(error)")
            }
            var all = InferenceFunction.MutableViews()
            for i in states.indices {
                all.insert(_overrideLifetime(states[i].mutableRawView(), borrowing: Void()), for: fn.descriptor.stateNames[i])
            }
            var out = try await fn.run(inputs: ["tokens": tokens, "start": start], states: consume all)
            XCTAssertEqual(out.count, 1)
            let logits = try XCTUnwrap(out.remove("logits")?.ndArray)
            XCTAssertNil(out.remove("logits"), "an output is taken once")
            XCTAssertEqual(logits.strides, Layout.rowMajorStrides(logits.shape), "returned outputs are contiguous")
            let values = logits.view(as: Float.self).withUnsafePointer { p, _, _ in Array(UnsafeBufferPointer(start: p, count: 8 * 64)) }
            XCTAssertEqual(values, try steps[0].outputs["logits"]!.float32())
            // The padded states were written through their strides: the padding is untouched.
            let first = states[0]
            let padding = first.view(as: UInt32.self).withUnsafePointer { p, _, strides in p[strides[2] - 1] }
            XCTAssertEqual(padding, 0xFFFF_FFFF)
        }
    }
#endif
