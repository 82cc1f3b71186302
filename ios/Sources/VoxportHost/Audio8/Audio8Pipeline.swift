import Foundation
import Synchronization
import VoxportCore
import VoxportRunner

/// One piece's result: its codes, audio (44.1 kHz) and where the time went.
public struct Audio8PieceResult: Sendable {
    public let promptColumns: Int
    public let loop: Audio8FrameLoopResult
    public let audio: [Float]
    public let decode: Audio8DecodeReport
    /// Milliseconds in the host steps (prompt, windows, uniforms, codec windows' codes) and in
    /// graph calls.
    public let hostMilliseconds: Double
    public let graphMilliseconds: Double
}

/// Text (as token ids per piece, `voxport tokenize audio8_tts`) to speech over an Audio8
/// bundle, the Python host's steps in its order (`conversion/audio8_tts/pipeline.py`):
///
///     ids ─Audio8Prompt─▶ prompt [11, P] ─prefill windows─▶ KV state ─frame loop─▶ codes [10, T]
///     ─▶ codec windows (whole, or streamed while the loop runs) ─▶ audio
///
/// The per-stage entry points (`frame`, `decodeWindow`) are what a bench times.
public final class Audio8Pipeline {
    public let runner: GraphRunner
    public let tables: Audio8Tables
    public let frameLoop: Audio8FrameLoop
    public let codec: Audio8Codec
    private let timer: TimedRunner

    public init(runner: GraphRunner, tables: Audio8Tables) throws {
        for g in [Audio8FrameLoop.graph, Audio8Codec.graph] where runner.manifest.graphs[g] == nil {
            throw VoxportError(.bundleIntegrity, "the bundle lacks graph \(PythonRepr.string(g)): re-export it")
        }
        timer = TimedRunner(wrapping: runner)
        self.runner = runner
        self.tables = tables
        frameLoop = Audio8FrameLoop(runner: timer, tables: tables)
        codec = try Audio8Codec(runner: timer, tables: tables)
    }

    /// The host over an opened (verified) bundle: its tables from `audio8_host.json`.
    public convenience init(bundle: ModelBundle, runner: GraphRunner) throws {
        try self.init(runner: runner, tables: try Audio8Tables.load(try bundle.fileURL(Audio8Tables.fileName)))
    }

    /// The pipeline's default frame budget.
    public var defaultMaxFrames: Int { tables.frame.maxNewFrames }

    /// Prompt rows for one piece's ids, the budget checked as `build_prompt` does.
    public func prompt(tokens: [Int32], voice: Audio8Voice?, maxFrames: Int) throws -> Audio8Prompt {
        let p = try Audio8Prompt.build(textIDs: tokens, voice: voice, tables: tables)
        try Audio8Prompt.checkBudget(columns: p.columns, maxFrames: maxFrames, tables: tables)
        return p
    }

    /// Piece `piece` of an utterance with `seed`: the pipeline's `seeded_uniforms(seed * 1000 + piece)`.
    public func uniforms(seed: Int, piece: Int) throws -> SeededUniforms {
        guard seed >= 0 else { throw VoxportError(.user, "the seed must be a non-negative integer, got \(seed)") }
        let c = tables.frame
        return SeededUniforms(
            seed: UInt64(seed * c.pieceSeedStride + piece),
            semanticCount: Int(tables.tokens.semanticEnd - tables.tokens.semanticBegin) + 1,
            codebookSize: c.codebookSize, fastBooks: c.numCodebooks - 1)
    }

    // -- per-stage entry points (a bench times these) ------------------------------------------

    /// One fused frame call (after a prefill has filled the KV rows before `pos`).
    public func frame(column: [Int32], pos: Int, window: [Int32], uniforms: inout SeededUniforms, step: Int = 0) async throws
        -> Audio8Frame
    {
        let u = uniforms.next(step: step)
        return try await frameLoop.frame(column: column, pos: pos, window: window, slow: u.slow, fast: u.fast)
    }

    /// One codec window over `columns` (frames of [10] codes).
    public func decodeWindow(_ columns: [[Int32]], _ window: Audio8CodecWindow) async throws -> [Float] {
        try await codec.decode(columns, window)
    }

    // -- text to speech ----------------------------------------------------------------------

    /// Every piece spoken and joined; with `stream`, `onAudio` gets each window as it decodes.
    public func speak(
        pieces: [[Int32]], voice: Audio8Voice? = nil, seed: Int = 0, maxFrames: Int? = nil, stream: Bool = false,
        onAudio: (([Float]) -> Void)? = nil
    ) async throws -> (audio: [Float], pieces: [Audio8PieceResult]) {
        guard !pieces.isEmpty else { throw VoxportError(.user, "audio8_tts: nothing to say (no pieces of token ids)") }
        let budget = maxFrames ?? defaultMaxFrames
        var results: [Audio8PieceResult] = []
        for (i, tokens) in pieces.enumerated() {
            results.append(try await speakPiece(tokens, voice: voice, seed: seed, piece: i, maxFrames: budget, stream: stream, onAudio: onAudio))
        }
        return (results.flatMap(\.audio), results)
    }

    func speakPiece(
        _ tokens: [Int32], voice: Audio8Voice?, seed: Int, piece: Int, maxFrames: Int, stream: Bool,
        onAudio: (([Float]) -> Void)?
    ) async throws -> Audio8PieceResult {
        let start = DispatchTime.now().uptimeNanoseconds, graphStart = timer.graphNanoseconds
        let prompt = try self.prompt(tokens: tokens, voice: voice, maxFrames: maxFrames)
        var u = try uniforms(seed: seed, piece: piece)
        var audio: [Float] = [], report = Audio8DecodeReport()
        let loop: Audio8FrameLoopResult
        if stream {
            var streamer = Audio8Streamer(codec: codec) { onAudio?($0) }
            let eos = tables.tokens.eos
            loop = try await frameLoop.generate(prompt: prompt, maxFrames: maxFrames, uniforms: &u) { _, f in
                try await streamer.frame(f, eos: eos)
            }
            try await streamer.finish(total: loop.frameCount)
            audio = streamer.emitted.flatMap { $0 }
            report.windows = streamer.report.windows
        } else {
            loop = try await frameLoop.generate(prompt: prompt, maxFrames: maxFrames, uniforms: &u)
            audio = try await codec.decodeWhole(loop.columns, report: &report)
            onAudio?(audio)
        }
        // clamped draws counted once per frame (streamed windows re-read their context)
        var counts = Audio8DecodeReport()
        _ = codec.prepare(loop.columns, report: &counts)
        report.frames = counts.frames
        report.clampedByBook = counts.clampedByBook
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let graph = Double(timer.graphNanoseconds - graphStart) / 1e6
        return Audio8PieceResult(
            promptColumns: prompt.columns, loop: loop, audio: audio, decode: report, hostMilliseconds: total - graph,
            graphMilliseconds: graph)
    }
}
