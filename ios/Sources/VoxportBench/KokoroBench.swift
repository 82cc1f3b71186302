import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner

/// `kokoro.speak`: `VP_PHONEMES` (as `voxport phonemize kokoro "TEXT"` gives them) through
/// `KokoroSpeaker`'s stream, as an app speaks — chunks, voice row, predictor, alignment, prosody,
/// harmonic source, vocoder, a chunk of audio per phoneme chunk, laid end to end
/// `KokoroPipeline.speak`'s audio — with `VP_VOICE` (a voice of the bundle or a blend; default
/// jf_alpha, else the first) and the source draws seeded by `VP_SEED` (splitmix, not torch's
/// generator). `VP_TEXT` is refused: Kokoro's G2P has no Swift port yet.
public final class KokoroSpeakBench: BenchCase {
    public static let name = "kokoro.speak"
    public static let model = "kokoro"
    public static let graphs: [String]? = KokoroPipeline.graphs
    public static let defaultVoice = "jf_alpha"

    let speaker: KokoroSpeaker
    let clock: TimedRunner
    let voice: VoicePack
    let phonemes: String
    let seed: Int

    public static func checkInputs(_ env: BenchEnvironment) throws {
        if env.text != nil {
            throw VoxportError(
                .user, "kokoro.speak takes phonemes, not VP_TEXT (Kokoro's G2P has no Swift port yet): "
                    + "unset VP_TEXT and set VP_PHONEMES to what `voxport phonemize kokoro \"TEXT\"` prints")
        }
    }

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        guard let phonemes = env.phonemes else {
            throw VoxportError(
                .user, "kokoro.speak needs VP_PHONEMES: the phonemes of `voxport phonemize kokoro \"TEXT\"`")
        }
        let files = try KokoroBundleFiles.load(bundle)
        clock = TimedRunner(wrapping: runner)
        speaker = try KokoroSpeaker(runner: clock, vocab: files.vocab, voices: files.voices, source: files.source)
        let names = files.voices.names
        let spec = env.voice ?? (names.contains(Self.defaultVoice) ? Self.defaultVoice : names.first ?? Self.defaultVoice)
        voice = try files.voices.voice(spec)
        // unknown symbols warn, empty input fails: before any graph runs
        _ = try KokoroPipeline(runner: runner, vocab: files.vocab, source: files.source).chunks(phonemes)
        self.phonemes = phonemes
        seed = env.seed
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        var options = KokoroSpeakOptions()
        options.seed = seed
        let graphStart = clock.graphNanoseconds
        let said = try await SpeechClock().drain(try speaker.speak(phonemes, voice: voice, options: options))
        let graphMs = Double(clock.graphNanoseconds - graphStart) / 1e6
        return BenchPass(
            audio: said.audio, sampleRate: KokoroAudio.sampleRate, audioSeconds: Double(said.audio.count) / Double(KokoroAudio.sampleRate),
            hostMilliseconds: said.timing.utteranceMilliseconds - graphMs,
            extra: ["chunks": Double(said.chunks)], speech: said.timing)
    }
}
