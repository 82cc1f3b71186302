import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner

/// What the Audio8 graph benches share: the host over the bundle, the pieces' ids —
/// `VP_TOKENS` (the pieces of `voxport tokenize audio8_tts "TEXT"`) or `VP_TEXT` split and
/// tokenized by the Speaker's front end (the bundle's tokenizer.json) — and `VP_VOICE` (a
/// `voxport voice audio8_tts` file, or none: the plain template).
struct Audio8BenchInputs {
    let host: Audio8Pipeline
    let pieces: [[Int32]]
    let voice: Audio8Voice?
    let seed: Int
    let maxFrames: Int
    /// `VP_TEXT`, and the Speaker that says it over `clock` (which times its graph calls).
    let text: String?
    let speaker: Audio8Speaker?
    let clock: TimedRunner

    init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment, bench: String) throws {
        guard env.tokens?.isEmpty == false || env.text != nil else {
            throw VoxportError(
                .user, "\(bench) needs VP_TOKENS (the output of `voxport tokenize audio8_tts \"TEXT\"`) or VP_TEXT (the text itself)")
        }
        let host = try Audio8Pipeline(bundle: bundle, runner: runner)
        self.host = host
        clock = TimedRunner(wrapping: runner)
        let books = host.tables.frame.numCodebooks
        let voice = try env.voice.map { try Audio8Voice.load(URL(fileURLWithPath: $0), books: books) }
        self.voice = voice
        seed = env.seed
        maxFrames = env.maxFrames ?? host.defaultMaxFrames
        text = env.text
        if let text = env.text {
            // the tokenizer only when there is text to read (a real one is megabytes of JSON)
            let speaker = try Audio8Speaker(runner: clock, tables: host.tables, tokenizer: try BenchText.tokenizer(bundle))
            self.speaker = speaker
            let maxFrames = maxFrames
            pieces = try BenchText.frontEnd { try speaker.pieces(text, voice: voice, maxFrames: maxFrames) }.map(\.ids)
        } else {
            speaker = nil
            pieces = (env.tokens ?? []).map { $0.map { Int32(clamping: $0) } }
        }
        // a bad id, voice or budget fails here, before any graph runs
        for p in pieces { _ = try host.prompt(tokens: p, voice: voice, maxFrames: maxFrames) }
    }

    var sampleRate: Int { host.tables.codec.sampleRate }
    func seconds(frames: Int) -> Double { Double(frames * host.tables.codec.frameSize) / Double(sampleRate) }
}

/// `audio8.speak`: every piece through the whole host — prompt, prefill, the frame loop, the
/// codec. `VP_TEXT`: through `Audio8Speaker`'s stream, as an app speaks (codec windows streamed
/// while the frames arrive); `VP_TOKENS`: `Audio8Pipeline.speak`, each piece decoded whole.
/// `first_audio_ms` is when the first window (text) or piece (tokens) of audio was ready.
public final class Audio8SpeakBench: BenchCase {
    public static let name = "audio8.speak"
    public static let model = "audio8_tts"
    public static let graphs: [String]? = ["ar", "codec"]
    let inputs: Audio8BenchInputs

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try Audio8BenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let rate = Double(inputs.sampleRate)
        let speech = SpeechClock()
        if let text = inputs.text, let speaker = inputs.speaker {
            var options = Audio8SpeakOptions()
            options.seed = inputs.seed
            options.maxFrames = inputs.maxFrames
            let graphStart = inputs.clock.graphNanoseconds
            let said = try await speech.drain(try speaker.speak(text, voice: inputs.voice, options: options))
            let graphMs = Double(inputs.clock.graphNanoseconds - graphStart) / 1e6
            return BenchPass(
                audio: said.audio, sampleRate: inputs.sampleRate, audioSeconds: Double(said.audio.count) / rate,
                hostMilliseconds: said.timing.utteranceMilliseconds - graphMs,
                extra: ["pieces": Double(said.pieces), "chunks": Double(said.chunks), "streamed": 1], speech: said.timing)
        }
        let (audio, pieces) = try await inputs.host.speak(
            pieces: inputs.pieces, voice: inputs.voice, seed: inputs.seed, maxFrames: inputs.maxFrames, onAudio: { speech.audio($0) })
        let timing = speech.finish()
        let frames = pieces.reduce(0) { $0 + $1.loop.frameCount }
        return BenchPass(
            audio: audio, sampleRate: inputs.sampleRate, audioSeconds: Double(audio.count) / rate,
            hostMilliseconds: pieces.reduce(0) { $0 + $1.hostMilliseconds },
            extra: ["frames": Double(frames), "pieces": Double(pieces.count), "streamed": 0,
                    "clamped": Double(pieces.reduce(0) { $0 + $1.decode.clamped })],
            speech: timing)
    }
}

/// `audio8.frame`: the first piece's prefill and frame loop (one fused `ar.frame` call per
/// frame), no codec; `ms_per_frame` is the loop's graph time per frame.
public final class Audio8FrameBench: BenchCase {
    public static let name = "audio8.frame"
    public static let model = "audio8_tts"
    public static let graphs: [String]? = ["ar"]
    let inputs: Audio8BenchInputs

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        inputs = try Audio8BenchInputs(bundle: bundle, runner: runner, environment: env, bench: Self.name)
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let host = inputs.host
        let prompt = try host.prompt(tokens: inputs.pieces[0], voice: inputs.voice, maxFrames: inputs.maxFrames)
        var u = try host.uniforms(seed: inputs.seed, piece: 0)
        let t0 = DispatchTime.now().uptimeNanoseconds
        var frameNs: UInt64 = 0, last = t0
        let loop = try await host.frameLoop.generate(prompt: prompt, maxFrames: inputs.maxFrames, uniforms: &u) { step, _ in
            let now = DispatchTime.now().uptimeNanoseconds
            if step > 0 { frameNs += now - last }
            last = now
        }
        let calls = loop.frames.count
        return BenchPass(
            audioSeconds: inputs.seconds(frames: loop.frameCount),
            extra: ["frames": Double(loop.frameCount), "prefill_calls": Double(loop.prefillCalls),
                    "ms_per_frame": calls > 1 ? Double(frameNs) / 1e6 / Double(calls - 1) : 0,
                    "loop_ms": Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6])
    }
}

/// `audio8.codec`: one full codec window (W frames of seeded codes in every book's range),
/// the call a stream makes every W - context frames.
public final class Audio8CodecBench: BenchCase {
    public static let name = "audio8.codec"
    public static let model = "audio8_tts"
    public static let graphs: [String]? = ["codec"]
    let host: Audio8Pipeline
    let columns: [[Int32]]

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        host = try Audio8Pipeline(bundle: bundle, runner: runner)
        let sizes = host.tables.codec.bookSizes
        var state = UInt64(truncatingIfNeeded: env.seed) &+ 0x9E37_79B9_7F4A_7C15
        columns = (0..<host.codec.window).map { _ in
            sizes.map { size in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int32((state >> 33) % UInt64(size))
            }
        }
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let w = Audio8CodecWindow(start: 0, emitFrom: 0, emitTo: columns.count)
        let t0 = DispatchTime.now().uptimeNanoseconds
        let audio = try await host.decodeWindow(columns, w)
        let ms = Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
        return BenchPass(
            audio: audio, sampleRate: host.tables.codec.sampleRate,
            audioSeconds: Double(audio.count) / Double(host.tables.codec.sampleRate),
            extra: ["window_frames": Double(columns.count), "window_ms": ms])
    }
}
