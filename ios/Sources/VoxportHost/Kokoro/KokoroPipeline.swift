import Foundation
import VoxportCore
import VoxportRunner

/// One chunk's result: its audio (L * 600 samples), durations and time spent.
public struct KokoroChunkResult: Sendable {
    public let audio: [Float]
    public let predDur: [Int]
    /// Milliseconds in the host steps (ids to graph inputs, alignment, source, trim).
    public let hostMilliseconds: Double
    public let graphMilliseconds: Double
    /// The chunk's G2P tokens (`KokoroChunk.tokens`): what its words are timed over.
    public var tokens: [KokoroWordToken] = []

    /// Each word's time in this chunk's audio (the publisher's rule, `KokoroWordTimings`).
    public var words: [WordTiming] { KokoroWordTimings.words(tokens, predDur: predDur) }
}

/// Text-to-speech over a Kokoro bundle from phonemes, the Python host's steps in its order
/// (`conversion/kokoro/pipeline.py`):
///
///     phonemes ─PhonemeChunker─▶ ids ─▶ predictor_T* ─▶ durations ─Durations─▶ aln
///     ─▶ prosody_T*_L* ─▶ F0 ─HarmonicSource─▶ har ─▶ vocoder_L* ─▶ trim ─▶ join
///
/// Each graph runs at the smallest bucket that fits (the tables travel in the manifest);
/// a chunk whose frames outgrow every bucket is split again at half its ids.
public final class KokoroPipeline {
    public static let graphs = ["predictor", "prosody", "vocoder"]
    /// The publisher's limit on one utterance's ids, pads included (`ids.MAX_IDS`).
    public static let maxIDs = 510

    public let runner: GraphRunner
    public let vocab: KokoroVocab
    public let source: HarmonicSource
    public let tables: [String: BucketTable]
    /// Warnings (dropped phoneme symbols); default: standard error.
    /// Fold the harmonic source's -π phases to +π (see `HarmonicSource.foldingNegativePi`):
    /// for parity runs against a host that folds the same way; off by default.
    public var foldNegativePi = false
    public var onWarning: (String) -> Void = { FileHandle.standardError.write(Data(("warning: " + $0 + "\n").utf8)) }
    /// Splits a chunk from text again when its frames overflow (Python's `_speak_chunk` runs
    /// `text_to_chunks(chunk.text)` at the smaller limit); nil, or a chunk without text: its
    /// phonemes are split.
    public var textChunker: KokoroTextChunker?

    public init(runner: GraphRunner, vocab: KokoroVocab, source: HarmonicSource) throws {
        var tables: [String: BucketTable] = [:]
        for g in Self.graphs {
            guard let entry = runner.manifest.graphs[g], let table = try entry.bucketTable() else {
                throw VoxportError(.bundleIntegrity, "the bundle lacks graph \(PythonRepr.string(g)) (or its buckets): re-export it")
            }
            tables[g] = table
        }
        self.runner = runner
        self.vocab = vocab
        self.source = source
        self.tables = tables
    }

    /// The chunks of `phonemes` that fit this bundle's largest token bucket.
    public func chunks(_ phonemes: String) throws -> [KokoroChunk] {
        try chunks(phonemes, maxIDs: maxChunkIDs)
    }

    /// The most ids (pads included) one chunk may hold here: the largest token bucket, at most
    /// the publisher's limit.
    public var maxChunkIDs: Int { min(tables["predictor"]!.limits["T"]!, Self.maxIDs) }

    func chunks(_ phonemes: String, maxIDs: Int) throws -> [KokoroChunk] {
        guard !phonemes.unicodeScalars.allSatisfy(\.properties.isWhitespace) else {
            throw VoxportError(.user, "the phoneme string is empty: give phonemes to speak")
        }
        let (chunks, warnings) = try PhonemeChunker(maxIDs: maxIDs, vocab: vocab).split(phonemes)
        warnings.forEach(onWarning)
        return chunks
    }

    func label(_ graph: String, _ bucket: Bucket) -> String { "\(graph)_\(bucket.label)" }

    // One step per graph: real-length arrays in, padded to the smallest bucket that fits,
    // real-length arrays out.

    /// duration [T] (before speed), d [1, T, C], t_en [1, C, T] for T ids.
    public func predictor(ids: [Int32], refS: [Float]) async throws -> (duration: [Float], d: Tensor, tEn: Tensor) {
        let n = ids.count
        let bucket = try tables["predictor"]!.select([("T", n)])
        let t = bucket["T"]!
        let padded = ids + [Int32](repeating: 0, count: t - n)
        let out = try await runner.run(
            graph: "predictor", function: label("predictor", bucket),
            inputs: [
                "ids": TensorSlices.ints(padded, [1, t]),
                "ref_s": TensorSlices.floats(refS, [1, refS.count]),
                "n_tokens": TensorSlices.ints([Int32(n)], [1]),
            ])
        let duration = Array(try output(out, "duration").float32().prefix(n))
        return (duration, try TensorSlices.resize(output(out, "d"), axis: 1, to: n),
                try TensorSlices.resize(output(out, "t_en"), axis: 2, to: n))
    }

    /// asr [1, C, L], F0 [2L], N [2L] for the L = sum(predDur) frames.
    public func prosody(d: Tensor, tEn: Tensor, predDur: [Int], refS: [Float]) async throws -> (asr: Tensor, f0: [Float], n: [Float]) {
        let tokens = d.shape[1], frames = predDur.reduce(0, +)
        let bucket = try tables["prosody"]!.select([("T", tokens), ("L", frames)])
        let tb = bucket["T"]!, lb = bucket["L"]!
        let (aln, _) = try Durations.paddedAlignment(predDur, tokens: tb, frames: lb)
        let out = try await runner.run(
            graph: "prosody", function: label("prosody", bucket),
            inputs: [
                "d": try TensorSlices.resize(d, axis: 1, to: tb),
                "t_en": try TensorSlices.resize(tEn, axis: 2, to: tb),
                "aln": TensorSlices.floats(aln, [1, tb, lb]),
                "ref_s": TensorSlices.floats(refS, [1, refS.count]),
                "n_frames": TensorSlices.ints([Int32(frames)], [1]),
            ])
        return (try TensorSlices.resize(output(out, "asr"), axis: 2, to: frames),
                Array(try output(out, "F0").float32().prefix(2 * frames)),
                Array(try output(out, "N").float32().prefix(2 * frames)))
    }

    /// The waveform's real L * 600 samples.
    public func vocoder(asr: Tensor, f0: [Float], n: [Float], har: [Float], harFrames: Int, refS: [Float]) async throws
        -> [Float]
    {
        let frames = asr.shape[2]
        let bucket = try tables["vocoder"]!.select([("L", frames)])
        let lb = bucket["L"]!
        let rows = 2 * source.config.bins
        let harPadded = KokoroAudio.padHar(har, rows: rows, frames: harFrames, bucketFrames: lb, hop: source.config.hop)
        let out = try await runner.run(
            graph: "vocoder", function: label("vocoder", bucket),
            inputs: [
                "asr": try TensorSlices.resize(asr, axis: 2, to: lb),
                "F0": TensorSlices.floats(f0 + [Float](repeating: 0, count: 2 * lb - f0.count), [1, 2 * lb]),
                "N": TensorSlices.floats(n + [Float](repeating: 0, count: 2 * lb - n.count), [1, 2 * lb]),
                "har": TensorSlices.floats(harPadded, [1, rows, harPadded.count / rows]),
                "ref_s": TensorSlices.floats(refS, [1, refS.count]),
                "n_frames": TensorSlices.ints([Int32(frames)], [1]),
            ])
        return KokoroAudio.trim(try output(out, "waveform").float32(), frames: frames)
    }

    /// One chunk (ids with their two pads) to audio.
    public func synthesize(ids: [Int32], refS: [Float], speed: Double = 1.0, noise: SourceNoise, seed: Int) async throws
        -> KokoroChunkResult
    {
        let start = DispatchTime.now().uptimeNanoseconds
        var graphNs: UInt64 = 0
        func timed<T>(_ f: () async throws -> T) async rethrows -> T {
            let t = DispatchTime.now().uptimeNanoseconds
            defer { graphNs += DispatchTime.now().uptimeNanoseconds - t }
            return try await f()
        }
        let pred = try await timed { try await predictor(ids: ids, refS: refS) }
        let predDur = try Durations.predDurations(pred.duration, speed: speed)
        let frames = predDur.reduce(0, +)
        let pros = try await timed { try await prosody(d: pred.d, tEn: pred.tEn, predDur: predDur, refS: refS) }
        let draws = noise.draws(frames: 2 * frames, seed: seed)
        var har = try source.har(f0: pros.f0, draws: draws)
        if foldNegativePi { har = source.foldingNegativePi(har) }
        let audio = try await timed {
            try await vocoder(asr: pros.asr, f0: pros.f0, n: pros.n, har: har.values, harFrames: har.frames, refS: refS)
        }
        let total = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        let graph = Double(graphNs) / 1e6
        return KokoroChunkResult(audio: audio, predDur: predDur, hostMilliseconds: total - graph, graphMilliseconds: graph)
    }

    /// Phonemes to 24 kHz audio: chunks synthesised (chunk i with seed `seed + i`) and joined.
    public func speak(_ phonemes: String, voice: VoicePack, speed: Double = 1.0, noise: SourceNoise, seed: Int = 0)
        async throws -> (audio: [Float], results: [KokoroChunkResult])
    {
        let chunks = try chunks(phonemes)
        guard !chunks.isEmpty else {
            throw VoxportError(.user, "nothing to say: \(PythonRepr.string(phonemes)) has no phoneme that makes a sound")
        }
        var results: [KokoroChunkResult] = []
        for (i, chunk) in chunks.enumerated() {
            results += try await speakChunk(chunk, voice: voice, speed: speed, noise: noise, seed: seed + i)
        }
        return (KokoroAudio.join(results.map(\.audio)), results)
    }

    /// One chunk; when its frames outgrow every bucket it is split again at half its ids
    /// (frames are only known after the predictor), seeds `seed + 1000 (j + 1)`.
    func speakChunk(_ chunk: KokoroChunk, voice: VoicePack, speed: Double, noise: SourceNoise, seed: Int) async throws
        -> [KokoroChunkResult]
    {
        let refS = try voice.row(nPhonemes: chunk.nPhonemes)
        do {
            var result = try await synthesize(ids: chunk.ids, refS: refS, speed: speed, noise: noise, seed: seed)
            result.tokens = chunk.tokens
            return [result]
        } catch let e as VoxportError where e.kind == .bucketOverflow {
            let limit = max(3, chunk.ids.count / 2)
            let parts: [KokoroChunk]
            if let textChunker, !chunk.text.isEmpty {
                let (split, warnings) = try textChunker.limited(to: limit).chunks(chunk.text)
                warnings.forEach(onWarning)
                parts = split
            } else {
                parts = try chunks(chunk.phonemes, maxIDs: limit)
            }
            if parts.count < 2 { throw e }
            var out: [KokoroChunkResult] = []
            for (j, part) in parts.enumerated() {
                out += try await speakChunk(part, voice: voice, speed: speed, noise: noise, seed: seed + 1000 * (j + 1))
            }
            return out
        }
    }

    func output(_ out: [String: Tensor], _ name: String) throws -> Tensor {
        guard let t = out[name] else {
            throw VoxportError(.bundleIntegrity, "graph output \(PythonRepr.string(name)) is missing (has: \(out.keys.sorted()))")
        }
        return t
    }
}

/// What a Kokoro bundle carries for its host (`conversion/kokoro/host_files.py`, `export.py`):
/// the vocabulary, every voice, and the source layer's weights; each file verified by
/// `ModelBundle.open` against `meta.files` before it is read.
public struct KokoroBundleFiles: Sendable {
    public let vocab: KokoroVocab
    public let voices: VoiceLibrary
    public let source: HarmonicSource

    public static func load(_ bundle: ModelBundle) throws -> KokoroBundleFiles {
        KokoroBundleFiles(
            vocab: try KokoroVocab.load(try bundle.fileURL(KokoroVocab.fileName)),
            voices: try VoiceLibrary.load(try bundle.fileURL(VoiceLibrary.fileName)),
            source: try HarmonicSource.load(try bundle.fileURL(HarmonicSource.fileName)))
    }
}
