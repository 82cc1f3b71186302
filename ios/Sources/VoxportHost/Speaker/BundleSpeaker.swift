import Foundation
import VoxportCore
import VoxportRunner

/// The one way to open any bundle folder as a `Speaker`: the manifest's model picks it.
public enum BundleSpeaker: Sendable {
    case kokoro(KokoroSpeaker)
    case chatterbox(ChatterboxSpeaker)
    case chatterboxTurbo(ChatterboxTurboSpeaker)
    case audio8(Audio8Speaker)

    /// Opens (and, by default, verifies every hash of) the bundle at `folder`, and loads the
    /// host files and tokenizer its model's Speaker reads; `runner` calls that bundle's graphs.
    public static func open(_ folder: URL, runner: any GraphRunner, verify: Bool = true) throws -> BundleSpeaker {
        let bundle = try ModelBundle.open(folder, verify: verify)
        switch bundle.manifest.model {
        case "kokoro": return .kokoro(try KokoroSpeaker(runner: runner, bundle: bundle))
        case "chatterbox": return .chatterbox(try ChatterboxSpeaker(runner: runner, bundle: bundle))
        case "chatterbox_turbo": return .chatterboxTurbo(try ChatterboxTurboSpeaker(runner: runner, bundle: bundle))
        case "audio8_tts": return .audio8(try Audio8Speaker(runner: runner, bundle: bundle))
        case let other:
            throw VoxportError(
                .user, "\(bundle.url.path): model \(PythonRepr.string(other)) does not speak (kokoro, chatterbox, chatterbox_turbo and audio8_tts do)")
        }
    }

    /// The model's Speaker, for what every model shares (`speak(text)`, `sampleRate`).
    public var speaker: any Speaker {
        switch self {
        case .kokoro(let s): s
        case .chatterbox(let s): s
        case .chatterboxTurbo(let s): s
        case .audio8(let s): s
        }
    }
}
