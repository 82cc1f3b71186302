import Foundation
import VoxportCore
import VoxportRunner

/// One pass of a bench: what it produced, so the driver can report RTF and calls per second.
public struct BenchPass: Sendable {
    /// Audio the pass made (empty for a graph-only bench such as `chatterbox.t3`).
    public var audio: [Float]
    public var sampleRate: Int
    /// Seconds of audio the pass stands for (a token or frame bench counts what it decoded).
    public var audioSeconds: Double
    /// The host's own time (the pass's wall time minus its graph calls), when the host reports it.
    public var hostMilliseconds: Double?
    /// Case-specific figures (e.g. `ms_per_token`), written into result.json as they are.
    public var extra: [String: Double]
    /// A speaking bench's stream: when its first audio and its whole utterance were ready.
    public var speech: SpeechTiming?

    public init(
        audio: [Float] = [], sampleRate: Int = 24_000, audioSeconds: Double, hostMilliseconds: Double? = nil,
        extra: [String: Double] = [:], speech: SpeechTiming? = nil
    ) {
        self.audio = audio
        self.sampleRate = sampleRate
        self.audioSeconds = audioSeconds
        self.hostMilliseconds = hostMilliseconds
        self.extra = extra
        self.speech = speech
    }
}

/// A bench a `VP_BENCH` value names: built once over a loaded bundle and runner (that time is
/// the load time), then run for 1 cold + `VP_PASSES` warm passes.
public protocol BenchCase: AnyObject {
    /// The `VP_BENCH` value, `model.what`.
    static var name: String { get }
    /// The manifest's `model` this bench needs.
    static var model: String { get }
    /// The graphs to load (nil: every graph of the bundle).
    static var graphs: [String]? { get }
    /// The only host files the bench reads, the only hashes verified at open (a text bench);
    /// nil: the bench reads the bundle, every hash verified.
    static var readsOnly: [String]? { get }

    /// Refuses what this bench cannot take, from the variables alone (`BenchEnvironment` calls
    /// it, before any bundle opens).
    static func checkInputs(_ env: BenchEnvironment) throws
    /// Refuses bad `VP_TEXT` with the front end's own error, once the bundle is open and before
    /// a runner starts (a worker or a device load costs seconds).
    static func checkText(_ env: BenchEnvironment, bundle: ModelBundle) throws

    /// Builds the bench (a bench that needs graph results before its passes awaits them here).
    init(bundle: ModelBundle, runner: GraphRunner, environment: BenchEnvironment) async throws
    func pass(_ index: Int) async throws -> BenchPass
}

extension BenchCase {
    public static var readsOnly: [String]? { nil }
    public static func checkInputs(_ env: BenchEnvironment) throws {}
    /// Every bench of a model reads `VP_TEXT` through that model's front end.
    public static func checkText(_ env: BenchEnvironment, bundle: ModelBundle) throws {
        try BenchText.check(env, bundle: bundle, model: model)
    }

    /// A bench that calls no graph: the driver starts no runner for it.
    static var loadsNoGraphs: Bool { graphs?.isEmpty == true }
}

/// Every bench there is. A model's benches live in its own file (`KokoroBench.swift`, ...) and
/// are listed here once.
public enum BenchCatalog {
    public static var cases: [BenchCase.Type] {
        [
            KokoroSpeakBench.self,
            ChatterboxT3Bench.self, ChatterboxEstimatorBench.self, ChatterboxVocoderBench.self, ChatterboxSpeakBench.self,
            ChatterboxTurboT3Bench.self, ChatterboxTurboEstimatorBench.self, ChatterboxTurboVocoderBench.self,
            ChatterboxTurboSpeakBench.self,
            Audio8SpeakBench.self, Audio8FrameBench.self, Audio8CodecBench.self,
            ChatterboxTextBench.self, ChatterboxTurboTextBench.self, Audio8TextBench.self, KokoroTextBench.self,
            CoreCallsBench.self,
        ]
    }

    public static var names: [String] { cases.map { $0.name }.sorted() }

    public static func type(named name: String) throws -> BenchCase.Type {
        guard let t = cases.first(where: { $0.name == name }) else {
            throw VoxportError(
                .user, "unknown VP_BENCH \(PythonRepr.string(name)): choose one of \(names.joined(separator: ", "))")
        }
        return t
    }
}
