import Foundation
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportText

/// `MODEL.text` of a model with S3Gen (`chatterbox.text`, `chatterbox_turbo.text`): `VP_TEXT`
/// through the model's front end only (its punc_norm, the bundle's tokenizer.json, the split to
/// the manifest's `text_budget`): no graph, no runner. Writes `text.json`, what `voxport
/// tokenize MODEL TEXT` prints for the bundle's snapshot; each pass times the front end on the
/// text (`front_end_ms`).
public class BudgetedTextBench<Pipeline: S3GenPipeline> {
    public static var model: String { Pipeline.model }
    public static var graphs: [String]? { [] }
    public static var readsOnly: [String]? { [S3GenSpeaker<Pipeline>.tokenizerFile] }
    let front: Pipeline.Front
    let budget: Int
    let text: String

    public static func checkInputs(_ env: BenchEnvironment) throws {
        try BenchText.checkTextBench(env, bench: "\(model).text", model: model)
    }

    public required init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        text = env.text!  // checkInputs
        front = Pipeline.Front(tokenizer: try BenchText.tokenizer(bundle))
        budget = try BenchText.textBudget(bundle.manifest)
        let chunks = try BenchText.frontEnd { try front.chunks(text, budget: budget) }
        try BenchText.write(Self.document(chunks, budget: budget), to: env.out)
    }

    /// `cli.py tokenize`'s JSON.
    static func document(_ chunks: [TextChunk], budget: Int) -> [String: Any] {
        ["model": model, "text_budget": budget, "chunks": chunks.map { ["text": $0.text, "ids": $0.ids.map(Int.init)] }]
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let t0 = DispatchTime.now().uptimeNanoseconds
        let chunks = try BenchText.frontEnd { try front.chunks(text, budget: budget) }
        let ms = BenchText.milliseconds(since: t0)
        return BenchPass(
            audioSeconds: 0,
            extra: ["front_end_ms": ms, "chunks": Double(chunks.count), "ids": Double(chunks.reduce(0) { $0 + $1.ids.count })])
    }
}

/// `audio8.text`: `VP_TEXT` through Audio8's front end only (the split into pieces that fit the
/// KV rows with the frame budget, each piece's TEXT segment through the bundle's tokenizer.json,
/// the plain prompt's row 0): no graph, no runner. Writes `text.json`, what `voxport tokenize
/// audio8_tts TEXT` prints for the bundle's snapshot (`VP_MAX_FRAMES` unset: the bundle's
/// budget, as tokenize uses it); each pass times the front end (`front_end_ms`).
public final class Audio8TextBench: BenchCase {
    public static let name = "audio8.text"
    public static let model = "audio8_tts"
    public static let graphs: [String]? = []
    public static let readsOnly: [String]? = [Audio8Speaker.tokenizerFile, Audio8Tables.fileName]
    let speaker: Audio8Speaker
    let maxFrames: Int
    let text: String

    public static func checkInputs(_ env: BenchEnvironment) throws {
        try BenchText.checkTextBench(env, bench: name, model: model)
    }

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        text = env.text!  // checkInputs
        // The Speaker's own split; its graphs are only named (the runner calls none).
        speaker = try Audio8Speaker(runner: runner, bundle: bundle)
        maxFrames = env.maxFrames ?? speaker.tables.frame.maxNewFrames
        guard let config = bundle.manifest.config["config"]?["name"]?.stringValue else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks 'name': re-export the bundle")
        }
        let chunks = try BenchText.frontEnd { try textChunks() }
        try BenchText.write(
            ["model": Self.model, "config": config, "max_frames": maxFrames,
             "chunks": chunks.map { ["text": $0.text, "ids": $0.ids.map(Int.init), "prompt": $0.prompt.map(Int.init)] }],
            to: env.out)
    }

    /// Each piece: its text, its TEXT segment's ids, and row 0 of its prompt (no voice).
    func textChunks() throws -> [(text: String, ids: [Int32], prompt: [Int32])] {
        let tables = speaker.tables
        return try speaker.pieces(text, voice: nil, maxFrames: maxFrames).map { piece in
            let p = try Audio8Prompt.build(textIDs: piece.ids, voice: nil, tables: tables)
            try Audio8Prompt.checkBudget(columns: p.columns, maxFrames: maxFrames, tables: tables)
            return (piece.text, piece.ids, (0..<p.columns).map { p.value(row: 0, column: $0) })
        }
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let t0 = DispatchTime.now().uptimeNanoseconds
        let chunks = try BenchText.frontEnd { try textChunks() }
        let ms = BenchText.milliseconds(since: t0)
        return BenchPass(
            audioSeconds: 0,
            extra: ["front_end_ms": ms, "chunks": Double(chunks.count), "ids": Double(chunks.reduce(0) { $0 + $1.ids.count })])
    }
}

/// `kokoro.text`: `VP_TEXT` through Kokoro's front end only (the text's paragraphs, misaki's G2P
/// over the bundle's `g2p/` data with words in no lexicon read by the bundle's letter rules,
/// `g2p/fallback/`, the chunker's split at 510 ids): no graph, no runner. Writes `text.json`,
/// what `voxport phonemize kokoro TEXT --fallback rules` prints; each pass times the front end
/// (`front_end_ms`). It reads `vocab.json` and `g2p/` alone, both hashed at open.
public final class KokoroTextBench: BenchCase {
    public static let name = "kokoro.text"
    public static let model = "kokoro"
    public static let graphs: [String]? = []
    public static let readsOnly: [String]? = [KokoroVocab.fileName, KokoroBundleFiles.g2pFolder]
    let chunker: KokoroTextChunker
    let text: String

    public static func checkInputs(_ env: BenchEnvironment) throws {
        try BenchText.checkTextBench(env, bench: name, model: model, verb: "phonemize")
    }

    public init(bundle: ModelBundle, runner: GraphRunner, environment env: BenchEnvironment) throws {
        text = env.text!  // checkInputs
        chunker = try KokoroTextChunker.load(bundle)
        let (chunks, warnings) = try chunker.chunks(text)
        for w in warnings { FileHandle.standardError.write(Data("voxport: warning: \(w)\n".utf8)) }
        try BenchText.write(Self.document(chunks, maxIDs: chunker.maxIDs), to: env.out)
    }

    /// `cli.py phonemize`'s JSON.
    static func document(_ chunks: [KokoroChunk], maxIDs: Int) -> [String: Any] {
        [
            "model": model, "max_ids": maxIDs,
            "chunks": chunks.map {
                ["text": $0.text, "phonemes": $0.phonemes, "ids": $0.ids.map(Int.init), "n_phonemes": $0.nPhonemes] as [String: Any]
            },
        ]
    }

    public func pass(_ index: Int) async throws -> BenchPass {
        let t0 = DispatchTime.now().uptimeNanoseconds
        let chunks = try chunker.chunks(text).chunks
        let ms = BenchText.milliseconds(since: t0)
        return BenchPass(
            audioSeconds: 0,
            extra: ["front_end_ms": ms, "chunks": Double(chunks.count), "ids": Double(chunks.reduce(0) { $0 + $1.ids.count })])
    }
}
