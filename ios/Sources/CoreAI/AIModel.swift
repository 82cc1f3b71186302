import Foundation

/// The kinds of compute unit a model can be specialised for.
public enum ComputeUnitKind: Hashable, Sendable, CaseIterable {
    case cpu, gpu, neuralEngine

    /// The kinds this machine has: the Linux runtime the mirror runs on has one CPU backend.
    public static var availableKinds: Set<ComputeUnitKind> { [.cpu] }
}

/// How a model is specialised. A *preferred* unit still lets the others take what it cannot
/// (numerics can move); `cpuOnly` is the parity setting. The Linux runtime has one CPU backend,
/// so here every option runs the same code: the options travel to the runtime child and are
/// recorded, nothing more.
public struct SpecializationOptions: Hashable, Sendable {
    public static let `default` = SpecializationOptions(preferred: nil, allowed: Set(ComputeUnitKind.allCases))
    public static let cpuOnly = SpecializationOptions(preferred: nil, allowed: [.cpu])

    public let preferredComputeUnitKind: ComputeUnitKind?
    public let allowedComputeUnitKinds: Set<ComputeUnitKind>
    public var expectFrequentReshapes = false

    public init(preferredComputeUnitKind: ComputeUnitKind) {
        self.init(preferred: preferredComputeUnitKind, allowed: Set(ComputeUnitKind.allCases))
    }

    private init(preferred: ComputeUnitKind?, allowed: Set<ComputeUnitKind>) {
        preferredComputeUnitKind = preferred
        allowedComputeUnitKinds = allowed
    }

    /// The options as the runtime child's `load_asset` takes them.
    var computeUnits: String {
        if allowedComputeUnitKinds == [.cpu] { return "cpu-only" }
        switch preferredComputeUnitKind {
        case .cpu?: return "cpu"
        case .gpu?: return "gpu"
        case .neuralEngine?: return "ane"
        case nil: return "default"
        }
    }
}

/// A loaded model: its functions by name. Give it a `.aimodel` folder (the Linux runtime
/// lowers source assets only: a `.aimodelc` is refused). Holding one keeps its asset loaded in
/// the runtime child; the last one released unloads it.
public struct AIModel: Sendable {
    let asset: LoadedAsset

    /// Load (and specialise) the model at `modelURL`.
    public init(contentsOf modelURL: URL, options: SpecializationOptions = .default) async throws {
        let url = try AIModelAsset.checkedURL(modelURL)
        let runtime = try await MirrorRuntime.shared(near: url)
        asset = try await runtime.load(url, options: options)
    }

    /// Load `modelURL` into `cache` (the mirror keeps no compiled cache: it loads as `init` does).
    @discardableResult
    public static func specialize(
        contentsOf modelURL: URL, options: SpecializationOptions = .default, cache: AIModelCache = .default,
        cachePolicy: AIModelCache.Policy = .default
    ) async throws -> AIModel {
        try await AIModel(contentsOf: modelURL, options: options)
    }

    public var functionNames: [String] { asset.functions.map(\.name) }

    public func functionDescriptor(for functionName: String) -> InferenceFunctionDescriptor? {
        asset.functions.first { $0.name == functionName }
    }

    /// The named function, ready to run; nil when the model has none of that name.
    public func loadFunction(named functionName: String) throws -> InferenceFunction? {
        functionDescriptor(for: functionName).map { InferenceFunction(descriptor: $0, asset: asset) }
    }
}

/// The compiled-model cache. The mirror compiles nothing ahead (the Linux runtime lowers each
/// asset when it loads), so the cache is always empty and deleting from it succeeds.
public final class AIModelCache: Sendable {
    public struct Policy: Sendable, Equatable {
        let persistent: Bool
        public static let `default` = Policy(persistent: false)
        public static let persistent = Policy(persistent: true)
    }

    public static let `default` = AIModelCache()

    private init() {}

    /// nil: there are no app groups on Linux.
    public init?(appGroup groupIdentifier: String) { return nil }

    /// The cached model for `modelURL` under `options`: never one in the mirror.
    public final func model(for modelURL: URL, options: SpecializationOptions) throws -> AIModel? { nil }

    public final func deleteEntry(for modelURL: URL, options: SpecializationOptions) throws {}
    public final func deleteEntries(for modelURL: URL) throws {}
    public final func deleteAll() throws {}
}

/// A model asset on disk, before it is loaded.
public struct AIModelAsset: Sendable {
    /// A function's signature as the asset records it.
    public struct FunctionDescriptor: Sendable, Hashable {
        public let name: String
    }

    /// What an asset holds.
    public struct Summary: Sendable {
        public let functions: [FunctionDescriptor]
    }

    public let url: URL

    /// The asset at `url` (a `.aimodel` folder); throws when there is none.
    public init(contentsOf url: URL) throws {
        self.url = try Self.checkedURL(url)
    }

    /// The asset's function names, read by the runtime child (a synchronous file read on a
    /// device; here a short-lived child answers, so call it off the main thread).
    public func summary(includingStatistics: Bool) throws -> Summary? {
        let names = try MirrorRuntime.functionNames(of: url)
        return Summary(functions: names.map { FunctionDescriptor(name: $0) })
    }

    /// `url` when it is an asset folder the Linux runtime can load; a clear error otherwise.
    static func checkedURL(_ url: URL) throws -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CoreAIError("no Core AI model asset at \(url.path)")
        }
        guard url.pathExtension == "aimodel" else {
            throw CoreAIError(
                "\(url.path) is not a .aimodel folder (the Linux runtime under the CoreAI mirror loads source assets only)")
        }
        return url.standardizedFileURL
    }
}
