import Foundation
import VoxportCore
import VoxportRunner
import VoxportText

/// A voice of a model with S3Gen: what the flow reads (`S3GenPrompt`), and its file.
public protocol S3GenVoice: S3GenPrompt {
    /// The bundle's default voice file.
    static var defaultFileName: String { get }
    /// A voice file (`voxport voice MODEL`); a user error naming the fix when it is not one.
    static func load(_ url: URL) throws -> Self
}

/// What a model's `generate` options share: T3's budget and the flow's steps.
public protocol S3GenOptions: Sendable {
    init()
    /// T3's new tokens per chunk at most; nil: the bundle's speech budget.
    var maxNewTokens: Int? { get set }
    var steps: Int { get set }
}

/// T3's draws as a chunk ends them: the tokens (one trailing stop token dropped), and whether a
/// stop token ended the loop.
public protocol T3Drawn: Sendable {
    var tokens: [Int] { get }
    var stopped: Bool { get }
}

/// One chunk's result, as a Speaker and a bench read it.
public protocol S3GenChunkResult: Sendable {
    /// float32 at 24 kHz, trim_fade applied.
    var wav: [Float] { get }
    /// The tokens S3Gen got.
    var speechTokens: [Int] { get }
    /// The tokens T3 drew.
    var t3Tokens: [Int] { get }
}

/// What a bundle of a model with S3Gen carries for its host: the flow's and HiFT's tables, the
/// default voice, each verified by `ModelBundle.open` before it is read.
public protocol S3GenBundleFiles: Sendable {
    associatedtype Voice: S3GenVoice
    var flow: FlowTables { get }
    var hift: HiftTables { get }
    var defaultVoice: Voice? { get }
    static func load(_ bundle: ModelBundle) throws -> Self
}

/// Text ids to speech through T3 then S3Gen, one chunk at a time: what Chatterbox's and
/// Chatterbox Turbo's pipelines share, so one Speaker (`S3GenSpeaker`) and one set of benches
/// (VoxportBench's `S3GenBench*`) serve both. `SendableMetatype`: a Speaker's task calls
/// through the type's conformance.
public protocol S3GenPipeline: AnyObject, SendableMetatype {
    associatedtype Voice: S3GenVoice
    associatedtype Options: S3GenOptions
    associatedtype Files: S3GenBundleFiles where Files.Voice == Voice
    associatedtype T3Out: T3Drawn
    associatedtype ChunkResult: S3GenChunkResult
    /// The model's text front end over the bundle's tokenizer.json.
    associatedtype Front: BudgetedText

    /// The manifest's model name.
    static var model: String { get }
    static var sampleRate: Int { get }
    /// T3's vocabulary: the uniforms one draw takes.
    static var t3Vocab: Int { get }
    /// T3's graph (`prefill_P*`, `decode`).
    static var t3Graph: String { get }
    /// The tokens S3Gen gets from T3's.
    static func speechTokens(_ t3Tokens: [Int]) -> [Int]

    init(runner: GraphRunner, files: Files) throws
    /// The runner given, timed.
    var runner: TimedRunner { get }
    var files: Files { get }
    var s3gen: S3GenHost { get }
    var speechBudget: Int { get }

    /// A user error when `voice` does not fit the bundle, before any graph.
    func checkVoice(_ voice: Voice) throws
    /// An error when chunk `ids` cannot run with `voice` and `options` (an id outside the text
    /// table, more prompt rows than the prefill buckets or the KV cache hold), before any graph.
    func checkChunk(_ ids: [Int32], voice: Voice, options: Options) throws
    func t3(textIDs: [Int32], voice: Voice, options: Options, uniforms: T3Uniforms) async throws -> T3Out
    func synthesize(textIDs: [Int32], voice: Voice, options: Options, draws: any ChatterboxDraws, chunk: Int) async throws
        -> ChunkResult
}

extension S3GenPipeline {
    /// `voice`, or the bundle's default; a user error naming the fix when there is neither.
    public func voice(_ voice: Voice?) throws -> Voice {
        guard let voice = voice ?? files.defaultVoice else {
            throw VoxportError(
                .user, "the bundle has no default voice (\(Voice.defaultFileName)): pass a voice from `voxport voice \(Self.model)`")
        }
        return voice
    }

    /// Chunks of text ids to one 24 kHz waveform (chunks joined as the Python pipeline does).
    public func speak(chunks: [[Int32]], voice: Voice? = nil, options: Options = .init(),
                      draws: any ChatterboxDraws = SplitMixDraws(vocab: Self.t3Vocab)) async throws
        -> (audio: [Float], results: [ChunkResult])
    {
        let voice = try self.voice(voice)
        guard !chunks.isEmpty else { throw VoxportError(.user, "nothing to say: no token chunks given") }
        try checkVoice(voice)
        var results: [ChunkResult] = []
        for (i, ids) in chunks.enumerated() {
            results.append(try await synthesize(textIDs: ids, voice: voice, options: options, draws: draws, chunk: i))
        }
        return (results.flatMap(\.wav), results)
    }
}

// -- Chatterbox -----------------------------------------------------------------------------

extension ChatterboxVoice: S3GenVoice {}
extension ChatterboxOptions: S3GenOptions {}
extension T3Result: T3Drawn {}
extension ChatterboxChunkResult: S3GenChunkResult {
    public var t3Tokens: [Int] { t3.tokens }
}
extension ChatterboxBundleFiles: S3GenBundleFiles {}

extension ChatterboxPipeline: S3GenPipeline {
    public typealias Front = ChatterboxText
    public static var model: String { "chatterbox" }
    public static var t3Vocab: Int { T3Tables.vocab }
    public static var t3Graph: String { T3Decoder.graph }
    public static func speechTokens(_ t3Tokens: [Int]) -> [Int] { SpeechTokens.dropInvalid(t3Tokens) }

    /// Refuses nothing: Swift's Chatterbox host has never checked the voice's prompt against
    /// the bundle's `prompt_tokens_max` (Python's `check_voice` does; Turbo's host does too).
    public func checkVoice(_ voice: ChatterboxVoice) throws {}

    public func checkChunk(_ ids: [Int32], voice: ChatterboxVoice, options: ChatterboxOptions) throws {
        let cond = try voice.condEmb(exaggeration: options.exaggeration)
        let (_, rows) = try files.t3.prefillEmbeds(condEmb: cond, textIDs: ids)
        _ = try decoder.checkFits(rows: rows, maxNewTokens: options.maxNewTokens ?? speechBudget)
    }
}

// -- Chatterbox Turbo -----------------------------------------------------------------------

extension ChatterboxTurboVoice: S3GenVoice {}
extension ChatterboxTurboOptions: S3GenOptions {}
extension ChatterboxTurboT3Result: T3Drawn {}
extension ChatterboxTurboChunkResult: S3GenChunkResult {
    public var t3Tokens: [Int] { t3.tokens }
}
extension ChatterboxTurboBundleFiles: S3GenBundleFiles {}

extension ChatterboxTurboPipeline: S3GenPipeline {
    public typealias Front = ChatterboxTurboText
    public static var model: String { "chatterbox_turbo" }
    public static var t3Vocab: Int { ChatterboxTurboT3Tables.vocab }
    public static var t3Graph: String { ChatterboxTurboT3.graph }
    public static func speechTokens(_ t3Tokens: [Int]) -> [Int] { ChatterboxTurboSpeechTokens.forS3Gen(t3Tokens) }

    public func checkChunk(_ ids: [Int32], voice: ChatterboxTurboVoice, options: ChatterboxTurboOptions) throws {
        try checkVoice(voice)
        let (_, rows) = try files.t3.prefillEmbeds(cond: voice.t3Cond, textIDs: ids.map { Int($0) })
        _ = try T3Prefill.bucket(rows: rows, maxNewTokens: options.maxNewTokens ?? speechBudget,
                                 buckets: t3Host.prefillBuckets, kvLength: t3Host.kvLength)
    }
}
