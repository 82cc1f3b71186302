import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner

/// `kokoro.speak`: `VP_TEXT` (through the bundle's G2P, `KokoroTextChunker`) or `VP_PHONEMES`
/// (as `voxport phonemize kokoro "TEXT"` gives them) through `KokoroSpeaker`'s stream, as an app
/// speaks — chunks, voice row, predictor, alignment, prosody, harmonic source, vocoder, a chunk
/// of audio per chunk, laid end to end `KokoroPipeline.speak`'s audio — with `VP_VOICE` (a voice
/// of the bundle or a blend; default jf_alpha, else the first) and the source draws seeded by
/// `VP_SEED` (splitmix, not torch's generator). Words misaki's lexicon lacks are read by the
/// bundle's letter rules (`g2p/fallback/`): the text's chunks are `voxport phonemize kokoro TEXT
/// --fallback rules --max-ids T`'s at the bundle's largest token bucket.
public final class KokoroSpeakBench: BenchCase {
    public static let name = "kokoro.speak"
    public static let model = "kokoro"
    public static let graphs: [String]? = KokoroPipeline.graphs
    public static let defaultVoice = "jf_alpha"

    enum Input {
        case text(String)
        case phonemes(String)
    }

    let speaker: KokoroSpeaker
    let clock: TimedRunner
    let voice: VoicePack
    let input: Input
    let seed: Int

    public static func checkInputs(_ env: BenchEnvironment) throws {
        if env.text != nil, env.phonemes != nil {
            throw VoxportError(.user, "VP_TEXT and VP_PHONEMES are both set: give one (the text, or its phonemes)")
        }
    }

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        if let text = env.text {
            input = .text(text)
        } else if let phonemes = env.phonemes {
            input = .phonemes(phonemes)
        } else {
            throw VoxportError(
                .user, "kokoro.speak needs VP_TEXT (the text) or VP_PHONEMES (`voxport phonemize kokoro \"TEXT\"`'s phonemes)")
        }
        clock = TimedRunner(wrapping: runner)
        speaker = try KokoroSpeaker(runner: clock, bundle: bundle)
        let names = speaker.voices.names
        let spec = env.voice ?? (names.contains(Self.defaultVoice) ? Self.defaultVoice : names.first ?? Self.defaultVoice)
        voice = try speaker.voices.voice(spec)
        // unknown symbols or words warn, empty input fails: before any graph runs
        switch input {
        case .text(let text): _ = try speaker.chunks(text)
        case .phonemes(let phonemes): _ = try KokoroPipeline(runner: runner, vocab: speaker.vocab, source: speaker.source).chunks(phonemes)
        }
        seed = env.seed
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        var options = KokoroSpeakOptions()
        options.seed = seed
        options.onWarning = { _ in }  // said once, at load
        let graphStart = clock.graphNanoseconds
        let stream: AsyncThrowingStream<SpeechChunk, any Error>
        switch input {
        case .text(let text): stream = try speaker.speak(text, voice: voice, options: options)
        case .phonemes(let phonemes): stream = try speaker.speak(phonemes: phonemes, voice: voice, options: options)
        }
        let said = try await SpeechClock().drain(stream)
        let graphMs = Double(clock.graphNanoseconds - graphStart) / 1e6
        return BenchPass(
            audio: said.audio, sampleRate: KokoroAudio.sampleRate, audioSeconds: Double(said.audio.count) / Double(KokoroAudio.sampleRate),
            hostMilliseconds: said.timing.utteranceMilliseconds - graphMs,
            extra: ["chunks": Double(said.chunks)], speech: said.timing)
    }
}
