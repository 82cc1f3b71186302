import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner

/// `kokoro.speak`: `VP_PHONEMES` (as `voxport phonemize kokoro "TEXT"` gives them) through the
/// whole Kokoro host — chunks, voice row, predictor, alignment, prosody, harmonic source,
/// vocoder, join — with `VP_VOICE` (a voice of the bundle or a blend; default jf_alpha, else
/// the first) and the source draws seeded by `VP_SEED` (splitmix, not torch's generator).
public final class KokoroSpeakBench: BenchCase {
    public static let name = "kokoro.speak"
    public static let model = "kokoro"
    public static let graphs: [String]? = KokoroPipeline.graphs
    public static let defaultVoice = "jf_alpha"

    let host: KokoroPipeline
    let voice: VoicePack
    let phonemes: String
    let seed: Int

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        guard let phonemes = env.phonemes else {
            throw VoxportError(
                .user, "kokoro.speak needs VP_PHONEMES: the phonemes of `voxport phonemize kokoro \"TEXT\"`")
        }
        let files = try KokoroBundleFiles.load(bundle)
        host = try KokoroPipeline(runner: runner, vocab: files.vocab, source: files.source)
        let names = files.voices.names
        let spec = env.voice ?? (names.contains(Self.defaultVoice) ? Self.defaultVoice : names.first ?? Self.defaultVoice)
        voice = try files.voices.voice(spec)
        _ = try host.chunks(phonemes)  // unknown symbols warn, empty input fails: before any graph runs
        self.phonemes = phonemes
        seed = env.seed
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let (audio, results) = try await host.speak(phonemes, voice: voice, noise: SplitMixNoise(), seed: seed)
        return BenchPass(
            audio: audio, sampleRate: KokoroAudio.sampleRate, audioSeconds: Double(audio.count) / Double(KokoroAudio.sampleRate),
            hostMilliseconds: results.reduce(0) { $0 + $1.hostMilliseconds },
            extra: ["chunks": Double(results.count)])
    }
}
