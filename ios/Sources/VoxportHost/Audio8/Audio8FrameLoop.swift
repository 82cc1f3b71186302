import VoxportCore
import VoxportRunner

/// One `ar.frame` call's answer (the host reads the draws; the logits are carried for gates).
public struct Audio8Frame: Sendable {
    /// The RAS window this frame saw.
    public let window: [Int32]
    /// Vocabulary id after RAS (eos stops the loop).
    public let semantic: Int32
    public let normal: Int32
    public let high: Int32
    /// code_0 (the semantic book) then the nine fast draws.
    public let codes: [Int32]
    public let logits: Tensor?
    public let fastLogits: Tensor?
}

/// What the loop made: the emitted frames' codes (the eos frame excluded) and how it stopped.
public struct Audio8FrameLoopResult: Sendable {
    /// Row-major [books, frameCount].
    public var codes: [Int32] { (0..<books).flatMap { b in columns.map { $0[b] } } }
    public let books: Int
    /// One [books] column per emitted frame.
    public var columns: [[Int32]] = []
    public var frames: [Audio8Frame] = []
    /// eos was drawn.
    public var finished = false
    public var prefillCalls = 0
    public var frameCount: Int { columns.count }
}

/// The frame loop over the bundle's `ar` graph (`ar/host.py`'s `generate`):
///
///     reset the KV state ─▶ prefill columns 0..P-2 in windows of 32 ─▶
///     frame(column P-1, pos P-1) ─▶ frame 0 ─▶ frame(frame 0's column, pos P) ─▶ …
///
/// stopping on eos (that frame is not emitted) or the frame budget. The KV state lives in the
/// runner, under `state`.
public struct Audio8FrameLoop {
    public static let graph = "ar"
    public let runner: GraphRunner
    public let tables: Audio8Tables
    public var state = "default"

    public init(runner: GraphRunner, tables: Audio8Tables) {
        self.runner = runner
        self.tables = tables
    }

    /// `ar.host.check_budget`: the KV rows the prefill's last window and the frames write.
    public func checkBudget(columns: Int, maxFrames: Int) throws {
        let w = tables.frame.prefillWindow
        let lastWindowEnd = ((max(columns - 1, 1) - 1) / w + 1) * w
        let need = max(columns - 1 + maxFrames, lastWindowEnd)
        if need > tables.frame.maxSeqLen {
            throw VoxportError(
                .user,
                "audio8: the prompt (\(columns) columns) plus \(maxFrames) frames needs \(need) KV rows, the graph holds "
                    + "\(tables.frame.maxSeqLen): shorten the text (it is split per sentence) or the reference voice")
        }
    }

    /// Write KV rows 0..columns-1 in windows (a pad column has row 0 = -1); the call count.
    public func prefill(_ prompt: Audio8Prompt, columns: Int) async throws -> Int {
        let w = tables.frame.prefillWindow, rows = prompt.rows
        var calls = 0
        for start in stride(from: 0, to: columns, by: w) {
            let n = min(w, columns - start)
            var codes = [Int32](repeating: 0, count: rows * w)
            for c in n..<w { codes[c] = -1 }
            for r in 0..<rows {
                for c in 0..<n { codes[r * w + c] = prompt.value(row: r, column: start + c) }
            }
            _ = try await runner.run(
                graph: Self.graph, function: "prefill",
                inputs: ["codes": TensorSlices.ints(codes, [1, rows, w]), "pos": TensorSlices.ints([Int32(start)], [1])],
                state: state)
            calls += 1
        }
        return calls
    }

    /// One fused `frame` call: `column` [11] at KV row `pos`, the RAS `window`, the uniforms.
    public func frame(column: [Int32], pos: Int, window: [Int32], slow: [Float], fast: [Float]) async throws -> Audio8Frame {
        let rows = tables.frame.rows, books = tables.frame.numCodebooks
        let out = try await runner.run(
            graph: Self.graph, function: "frame",
            inputs: [
                "codes": TensorSlices.ints(column, [1, rows, 1]),
                "pos": TensorSlices.ints([Int32(pos)], [1]),
                "noise_slow": TensorSlices.floats(slow, [2, slow.count / 2]),
                "window": TensorSlices.ints(window, [window.count]),
                "noise_fast": TensorSlices.floats(fast, [books - 1, fast.count / (books - 1)]),
                "forced": TensorSlices.ints([Int32](repeating: 0, count: rows), [rows]),
                "use_forced": TensorSlices.ints([0], [1]),
            ],
            state: state)
        let codes = try Self.integers(out, "codes")
        guard codes.count == books else {
            throw VoxportError(.bundleIntegrity, "ar.frame returned \(codes.count) codes, the model has \(books) books")
        }
        return Audio8Frame(
            window: window, semantic: try Self.integers(out, "semantic")[0], normal: try Self.integers(out, "normal")[0],
            high: try Self.integers(out, "high")[0], codes: codes, logits: out["logits"], fastLogits: out["fast_logits"])
    }

    /// The publisher's `generate` over the graph; `onFrame(step, frame)` awaited after every call.
    public func generate<U: Audio8Uniforms>(
        prompt: Audio8Prompt, maxFrames: Int, uniforms: inout U,
        onFrame: ((Int, Audio8Frame) async throws -> Void)? = nil
    ) async throws -> Audio8FrameLoopResult {
        guard prompt.rows == tables.frame.rows, prompt.columns >= 2 else {
            throw VoxportError(.user, "audio8: prompt must be [\(tables.frame.rows), P >= 2], got [\(prompt.rows), \(prompt.columns)]")
        }
        let width = prompt.columns
        try checkBudget(columns: width, maxFrames: maxFrames)
        try await runner.resetState(graph: Self.graph, state: state)
        var result = Audio8FrameLoopResult(books: tables.frame.numCodebooks)
        result.prefillCalls = try await prefill(prompt, columns: width - 1)
        var column = prompt.column(width - 1)
        var window = RASWindow(size: tables.frame.rasWindow)
        for step in 0..<maxFrames {
            let u = uniforms.next(step: step)
            let frame = try await frame(column: column, pos: width - 1 + step, window: window.values, slow: u.slow, fast: u.fast)
            result.frames.append(frame)
            try await onFrame?(step, frame)
            if frame.semantic == tables.tokens.eos {
                result.finished = true
                break
            }
            column = [frame.semantic] + frame.codes
            result.columns.append(frame.codes)
            window.advance(step: step, semantic: frame.semantic)
        }
        return result
    }

    static func integers(_ out: [String: Tensor], _ name: String) throws -> [Int32] {
        guard let t = out[name] else {
            throw VoxportError(.bundleIntegrity, "ar.frame output \(PythonRepr.string(name)) is missing (has: \(out.keys.sorted()))")
        }
        switch t.storage {
        case .int32(let v): return v
        case .int64(let v): return v.map { Int32(truncatingIfNeeded: $0) }
        default: throw VoxportError(.bundleIntegrity, "ar.frame output \(name) is \(t.dtype), not integers")
        }
    }
}
