import Foundation
import VoxportCore

/// What one bench run is, read from `VP_*` environment variables: the app shell gets them from
/// its launch environment (`voxport device-bench --env K=V`), `swift run voxport-bench` from the
/// shell. Everything is checked here, before a bundle loads: a bad value is one clear error.
public struct BenchEnvironment: Sendable, Equatable {
    /// Where graphs run (`VP_RUNNER`).
    public enum RunnerKind: String, Sendable, CaseIterable {
        /// Apple's Core AI framework on the device (iOS / macOS with Core AI only).
        case coreai
        /// The real Core AI runtime in a Python child, `voxport serve` (Linux and macOS).
        case worker
        /// Answers from a recording (`VP_REPLAY`): the host's own time, graphs excluded.
        case replay
    }

    public let bench: String
    public let bundle: URL
    public let runner: RunnerKind
    /// Compute units for `coreai` (`cpu-only` by default: parity needs it; `cpu`, `gpu`, `ane`
    /// are preferences the framework may override).
    public let units: String
    /// Warm passes after the one cold pass.
    public let passes: Int
    public let seed: Int
    public let phonemes: String?
    public let tokens: [[Int]]?
    /// Chatterbox / Audio8: the text itself, through the model's front end and the bundle's
    /// tokenizer.json. As given (not trimmed): the front end judges it, with Python's wording.
    public let text: String?
    public let voice: String?
    /// Audio8: the frame budget per piece (default the host's); random weights never draw eos.
    public let maxFrames: Int?
    /// Chatterbox: T3's new tokens per chunk at most (default the bundle's speech budget);
    /// random weights never draw the stop token.
    public let maxTokens: Int?
    public let out: URL
    /// A `voxport-replay/1` recording folder (`VP_RUNNER=replay`).
    public let replay: URL?

    public static let units = ["cpu-only", "cpu", "gpu", "ane"]

    public static var usage: String {
        """
        usage: VP_BENCH=NAME VP_BUNDLE=DIR [VP_*=...] voxport-bench

          VP_BENCH     \(BenchCatalog.names.joined(separator: " | "))
          VP_BUNDLE    a bundle folder (`voxport export MODEL`)
          VP_RUNNER    coreai | worker | replay (default: \(defaultRunner.rawValue))
          VP_UNITS     \(units.joined(separator: " | ")) (coreai; default cpu-only)
          VP_PASSES    warm passes after the cold one (default 3)
          VP_SEED      seed of the host's draws (default 0)
          VP_PHONEMES  Kokoro: phonemes, as `voxport phonemize kokoro "TEXT"` prints them
          VP_TOKENS    Chatterbox (Turbo) / Audio8: `voxport tokenize MODEL "TEXT"`'s JSON, or ids
          VP_TEXT      the text, through the bundle's front end (tokenizer.json; Kokoro: g2p/)
                       (*.speak: the Speaker's stream; *.text: text.json as `voxport tokenize`,
                       Kokoro's as `voxport phonemize`)
          VP_VOICE     a voice of the bundle, or a file from `voxport voice`
          VP_MAX_FRAMES  Audio8: frames per piece at most (default the host's budget)
          VP_MAX_TOKENS  Chatterbox (Turbo): T3 tokens per chunk at most (default the bundle's budget)
          VP_OUT       folder for result.json and audio.wav (default ./voxport-bench-out)
          VP_REPLAY    a voxport-replay/1 recording (VP_RUNNER=replay)
        """
    }

    /// Read `env`; relative paths (`VP_BUNDLE`, `VP_OUT`, `VP_REPLAY`) resolve against `base` —
    /// the app's Documents folder on a device, where `voxport sideload` puts bundles — or the
    /// working directory when `base` is nil.
    public init(_ env: [String: String], base: URL? = nil) throws {
        func path(_ p: String) -> URL {
            guard let base, !p.hasPrefix("/") else { return URL(fileURLWithPath: p) }
            return base.appendingPathComponent(p)
        }
        func value(_ key: String) -> String? {
            guard let v = env[key]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
            return v
        }
        guard let bench = value("VP_BENCH") else {
            throw Self.error("VP_BENCH is not set: choose one of \(BenchCatalog.names.joined(separator: ", "))")
        }
        guard BenchCatalog.names.contains(bench) else {
            throw Self.error(
                "unknown VP_BENCH \(PythonRepr.string(bench)): choose one of \(BenchCatalog.names.joined(separator: ", "))")
        }
        guard let bundle = value("VP_BUNDLE") else {
            throw Self.error("VP_BUNDLE is not set: give a bundle folder (`voxport export MODEL` writes one)")
        }
        let runnerName = value("VP_RUNNER") ?? Self.defaultRunner.rawValue
        guard let runner = RunnerKind(rawValue: runnerName) else {
            throw Self.error(
                "unknown VP_RUNNER \(PythonRepr.string(runnerName)): choose one of "
                    + RunnerKind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let units = value("VP_UNITS") ?? "cpu-only"
        guard Self.units.contains(units) else {
            throw Self.error("unknown VP_UNITS \(PythonRepr.string(units)): choose one of \(Self.units.joined(separator: ", "))")
        }
        self.bench = bench
        self.bundle = path(bundle)
        self.runner = runner
        self.units = units
        passes = try Self.integer(value("VP_PASSES"), "VP_PASSES", default: 3, minimum: 0)
        seed = try Self.integer(value("VP_SEED"), "VP_SEED", default: 0, minimum: Int.min)
        phonemes = value("VP_PHONEMES")
        tokens = try value("VP_TOKENS").map(Self.tokenLists)
        text = env["VP_TEXT"]
        if text != nil, tokens != nil {
            throw Self.error("VP_TEXT and VP_TOKENS are both set: give one (VP_TEXT the text, VP_TOKENS `voxport tokenize`'s ids)")
        }
        voice = value("VP_VOICE")
        maxFrames = try value("VP_MAX_FRAMES").map { try Self.integer($0, "VP_MAX_FRAMES", default: 0, minimum: 1) }
        maxTokens = try value("VP_MAX_TOKENS").map { try Self.integer($0, "VP_MAX_TOKENS", default: 0, minimum: 1) }
        out = path(value("VP_OUT") ?? "voxport-bench-out")
        replay = value("VP_REPLAY").map(path)
        if runner == .replay, replay == nil {
            throw Self.error("VP_RUNNER=replay needs VP_REPLAY: a voxport-replay/1 recording folder")
        }
        try BenchCatalog.type(named: bench).checkInputs(self)
    }

    /// Core AI where Apple's framework exists, else the Python worker (on Linux the package's
    /// CoreAI mirror is there too, as `VP_RUNNER=coreai`; the worker is the direct way in).
    public static var defaultRunner: RunnerKind {
        #if canImport(CoreAI) && !os(Linux)
            .coreai
        #else
            .worker
        #endif
    }

    static func error(_ message: String) -> VoxportError { VoxportError(.user, message) }

    static func integer(_ text: String?, _ key: String, default d: Int, minimum: Int) throws -> Int {
        guard let text else { return d }
        guard let n = Int(text), n >= minimum else {
            throw error("\(key)=\(PythonRepr.string(text)) is not a whole number\(minimum == 0 ? " ≥ 0" : "")")
        }
        return n
    }

    /// `VP_TOKENS`: the JSON `voxport tokenize` prints (`{"chunks": [{"ids": [...]}, ...]}`), a
    /// JSON list of id lists, one id list, or ids separated by commas/spaces (one chunk).
    static func tokenLists(_ text: String) throws -> [[Int]] {
        if let data = text.data(using: .utf8), let any = try? JSONSerialization.jsonObject(with: data) {
            if let doc = any as? [String: Any], let chunks = doc["chunks"] as? [[String: Any]] {
                let lists = chunks.compactMap { ($0["ids"] ?? $0["tokens"]) as? [Int] }
                if lists.count == chunks.count, !lists.isEmpty { return lists }
            } else if let lists = any as? [[Int]], !lists.isEmpty {
                return lists
            } else if let list = any as? [Int], !list.isEmpty {
                return [list]
            }
            throw error("VP_TOKENS is JSON but not token ids: give `voxport tokenize MODEL \"TEXT\"`'s output")
        }
        let parts = text.split(whereSeparator: { $0 == "," || $0 == " " })
        let ids = parts.compactMap { Int($0) }
        guard !ids.isEmpty, ids.count == parts.count else {
            throw error("VP_TOKENS is neither JSON nor ids separated by commas: give `voxport tokenize`'s output")
        }
        return [ids]
    }
}
