import Foundation
import VoxportCore
import VoxportHost
import VoxportText

/// `VP_TEXT` as every bench reads it: through the model's own front end (Chatterbox and Audio8:
/// the bundle's tokenizer.json; Kokoro: misaki over the bundle's `g2p/`). Bad text fails with
/// the front end's (Python's) wording.
enum BenchText {
    /// A budgeted front end's chunk budget in ids (Chatterbox, Turbo): `config.text_budget`,
    /// from the manifest.
    static func textBudget(_ manifest: Manifest) throws -> Int {
        guard let budget = manifest.config["config"]?["text_budget"]?.intValue else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks 'text_budget': re-export the bundle")
        }
        return budget
    }

    /// The bundle's tokenizer.json (the file both Speakers read).
    static func tokenizer(_ bundle: ModelBundle) throws -> Tokenizer {
        try Tokenizer(contentsOf: try bundle.fileURL(ChatterboxSpeaker.tokenizerFile))
    }

    /// `body` with a front end's `TextError` as a user error, its message unchanged.
    static func frontEnd<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as TextError {
            throw VoxportError(.user, e.message)
        }
    }

    /// Empty or blank `VP_TEXT`, refused before a runner starts: Chatterbox's and Turbo's chunks
    /// over the bundle's (small) tokenizer; Audio8's template, which refuses the same text its split does.
    static func check(_ env: BenchEnvironment, bundle: ModelBundle, model: String) throws {
        guard let text = env.text else { return }
        switch model {
        case ChatterboxPipeline.model:
            try checkBudgeted(ChatterboxText.self, text, bundle: bundle)
        case ChatterboxTurboPipeline.model:
            try checkBudgeted(ChatterboxTurboText.self, text, bundle: bundle)
        case "audio8_tts":
            _ = try frontEnd { try Audio8Text.templateParts(text: text) }
        case "kokoro":
            // The paragraphs and numbers alone (no G2P load here): empty or blank text and a
            // number too long are refused now; text with no pronounceable word is refused when
            // the bench loads, before a call.
            try KokoroTextChunker.checkNumbers(text)
            if KokoroParagraphs.split(text).isEmpty {
                throw VoxportError(.user, "nothing to say: the text is empty; give some words to speak")
            }
            let g2p = bundle.url.appendingPathComponent(KokoroSpeaker.g2pFolder)
            if bundle.manifest.files[KokoroSpeaker.g2pFolder] == nil || !FileManager.default.fileExists(atPath: g2p.path) {
                throw KokoroTextChunker.missingG2P(bundle.url)
            }
            // Both Kokoro benches read words in no lexicon by the bundle's letter rules.
            let rules = g2p.appendingPathComponent(KokoroBundleFiles.fallbackFolder).appendingPathComponent(MisakiLetterRules.fileName)
            if !FileManager.default.fileExists(atPath: rules.path) {
                throw KokoroBundleFiles.missingLetterRules(bundle.url)
            }
        default:
            break
        }
    }

    /// `text`'s chunks over the bundle's (small) tokenizer: empty or blank text is refused.
    static func checkBudgeted<Front: BudgetedText>(_ front: Front.Type, _ text: String, bundle: ModelBundle) throws {
        let front = Front(tokenizer: try tokenizer(bundle))
        let budget = try textBudget(bundle.manifest)
        _ = try frontEnd { try front.chunks(text, budget: budget) }
    }

    /// A text bench reads `VP_TEXT` only: what it writes is the ids, for no voice.
    static func checkTextBench(_ env: BenchEnvironment, bench: String, model: String, verb: String = "tokenize") throws {
        guard env.text != nil else {
            throw VoxportError(.user, "\(bench) needs VP_TEXT: the text to run through the bundle's front end")
        }
        if env.voice != nil {
            throw VoxportError(
                .user, "\(bench) writes what `voxport \(verb) \(model) TEXT` prints, which has no voice: unset VP_VOICE")
        }
    }

    /// `text.json` into `VP_OUT`, keys sorted (the values are what `voxport tokenize` prints).
    static func write(_ doc: [String: Any], to dir: URL) throws {
        let data = try JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys, .withoutEscapingSlashes])
        do {
            try (data + Data("\n".utf8)).write(to: dir.appendingPathComponent("text.json"), options: .atomic)
        } catch {
            throw VoxportError(.io, "cannot write \(dir.path)/text.json: \(error.localizedDescription)")
        }
    }

    static func milliseconds(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e6 }
}
