import VoxportCore
import VoxportRunner

/// What a decode did: frames decoded, padding frames dropped, draws above their book's size
/// (clamped by the graph, counted here), codec calls (`codec/host.py`'s `DecodeReport`).
public struct Audio8DecodeReport: Equatable, Sendable {
    public var frames = 0
    public var dropped = 0
    public var clampedByBook: [Int] = []
    public var windows = 0
    public var clamped: Int { clampedByBook.reduce(0, +) }
    public init() {}
}

/// One codec window: decode frames `start..<emitTo`, keep the samples of `emitFrom..<emitTo`.
public struct Audio8CodecWindow: Equatable, Sendable {
    public let start: Int, emitFrom: Int, emitTo: Int
    public init(start: Int, emitFrom: Int, emitTo: Int) {
        self.start = start
        self.emitFrom = emitFrom
        self.emitTo = emitTo
    }
}

/// The codec over the static `codec` graph (`codec/host.py`): a W-frame window, every op
/// causal, so a window whose codes end early is zero-padded on the right and cut, and a stream
/// decodes windows that each re-read up to `context` frames already emitted.
public struct Audio8Codec {
    public static let graph = "codec"
    public static let function = "main"
    public let runner: GraphRunner
    public let tables: Audio8Tables
    /// Frames per graph call (the graph's input shape: 160 published).
    public let window: Int
    /// Frames a later window re-reads: min(32, W / 4) (`pipeline.context_frames`).
    public let context: Int

    public init(runner: GraphRunner, tables: Audio8Tables) throws {
        let fn = try runner.manifest.function(graph: Self.graph, function: Self.function)
        guard let shape = fn.inputs.first?.shape, shape.count == 3, shape[1] == tables.frame.numCodebooks else {
            throw VoxportError(.bundleIntegrity, "the codec graph's input is not [1, \(tables.frame.numCodebooks), W]: re-export the bundle")
        }
        self.runner = runner
        self.tables = tables
        window = shape[2]
        context = min(tables.codec.contextFrames, window / 4)
    }

    /// `window_plan`: windows over `total` frames, each at most `window` long.
    public static func plan(total: Int, window: Int, context: Int) throws -> [Audio8CodecWindow] {
        guard context >= 0, context < window else {
            throw VoxportError(.user, "context (\(context)) must be in [0, window=\(window))")
        }
        var plan: [Audio8CodecWindow] = [], done = 0
        while done < total {
            let start = max(0, done - context), end = min(start + window, total)
            plan.append(Audio8CodecWindow(start: start, emitFrom: done, emitTo: end))
            done = end
        }
        return plan
    }

    /// `prepare_codes`: the publisher decodes the first count(valid frames) frames (a frame
    /// with any negative code is padding); draws above a book's size are counted.
    public func prepare(_ columns: [[Int32]], report: inout Audio8DecodeReport) -> [[Int32]] {
        let valid = columns.filter { $0.allSatisfy { $0 >= 0 } }.count
        let kept = Array(columns.prefix(valid))
        let sizes = tables.codec.bookSizes
        if report.clampedByBook.isEmpty { report.clampedByBook = [Int](repeating: 0, count: sizes.count) }
        for col in kept {
            for (b, v) in col.enumerated() where Int(v) > sizes[b] - 1 { report.clampedByBook[b] += 1 }
        }
        report.frames += valid
        report.dropped += columns.count - valid
        return kept
    }

    /// One graph call on frames `w.start..<w.emitTo` of `columns` (zero-padded to the
    /// window); the samples of `w.emitFrom..<w.emitTo`.
    public func decode(_ columns: [[Int32]], _ w: Audio8CodecWindow) async throws -> [Float] {
        let books = tables.frame.numCodebooks, n = w.emitTo - w.start
        guard n > 0, n <= window, w.emitTo <= columns.count else {
            throw VoxportError(.user, "codec window \(w.start)..<\(w.emitTo) does not fit \(columns.count) frames / window \(window)")
        }
        var block = [Int32](repeating: 0, count: books * window)
        for t in 0..<n {
            let col = columns[w.start + t]
            for b in 0..<books { block[b * window + t] = col[b] }
        }
        let out = try await runner.run(
            graph: Self.graph, function: Self.function, inputs: ["codes": TensorSlices.ints(block, [1, books, window])])
        guard let wav = try out["wav"]?.float32() else {
            throw VoxportError(.bundleIntegrity, "codec output 'wav' is missing (has: \(out.keys.sorted()))")
        }
        let fs = tables.codec.frameSize
        return Array(wav[(w.emitFrom - w.start) * fs..<(w.emitTo - w.start) * fs])
    }

    /// `decode_whole`: the utterance after generation, windows sharing `context` frames.
    public func decodeWhole(_ columns: [[Int32]], report: inout Audio8DecodeReport) async throws -> [Float] {
        let kept = prepare(columns, report: &report)
        var wav: [Float] = []
        for w in try Self.plan(total: kept.count, window: window, context: context) {
            wav += try await decode(kept, w)
            report.windows += 1
        }
        return wav
    }
}

/// Decodes codec windows while the frame loop runs (`pipeline._Streamer`): the first window
/// after W frames, then one per W - context new frames, the rest after the last frame.
public struct Audio8Streamer {
    public let codec: Audio8Codec
    public private(set) var columns: [[Int32]] = []
    public private(set) var done = 0
    public private(set) var report = Audio8DecodeReport()
    public private(set) var emitted: [[Float]] = []
    let emit: ([Float]) -> Void

    public init(codec: Audio8Codec, emit: @escaping ([Float]) -> Void = { _ in }) {
        self.codec = codec
        self.emit = emit
    }

    var step: Int { done == 0 ? codec.window : codec.window - codec.context }

    /// After each frame call: keep a non-eos frame's codes; decode when a window is ready.
    public mutating func frame(_ frame: Audio8Frame, eos: Int32) async throws {
        if frame.semantic != eos { columns.append(frame.codes) }
        if columns.count - done >= step { try await decode(upTo: done + step) }
    }

    /// After the loop: whatever is left.
    public mutating func finish(total: Int) async throws {
        if total > done { try await decode(upTo: total) }
    }

    mutating func decode(upTo total: Int) async throws {
        while done < total {
            let start = max(0, done - codec.context), end = min(start + codec.window, total)
            var part = Audio8DecodeReport()
            let kept = codec.prepare(Array(columns[start..<end]), report: &part)
            let wav = try await codec.decode(kept, Audio8CodecWindow(start: 0, emitFrom: done - start, emitTo: end - start))
            report.windows += 1
            emitted.append(wav)
            emit(wav)
            done = end
        }
    }
}
