import Foundation
import VoxportCore
import VoxportRunner

/// A model's `config` in its manifest (`manifest.config["config"]`, the Python dataclass's JSON):
/// the sizes a host reads, each missing one a bundle-integrity error naming the key.
public struct BundleConfig: Sendable {
    public let values: JSONValue

    public init(_ manifest: Manifest, model: String) throws {
        guard let config = manifest.config["config"] else {
            throw VoxportError(.bundleIntegrity, "the manifest has no \(model) config: re-export the bundle")
        }
        values = config
    }

    public func sizes(_ key: String) throws -> [Int] {
        guard let v = values[key]?.arrayValue?.compactMap(\.intValue), !v.isEmpty else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks \(PythonRepr.string(key)): re-export the bundle")
        }
        return v
    }

    public func int(_ key: String) throws -> Int {
        guard let v = values[key]?.intValue else {
            throw VoxportError(.bundleIntegrity, "the manifest's config lacks \(PythonRepr.string(key)): re-export the bundle")
        }
        return v
    }
}

/// S3Gen's half of a chunk, shared by Chatterbox and Chatterbox Turbo (Python's
/// `conversion/s3gen/`): speech tokens ─FlowSolver (flow_encoder, then the loop flow_host.npz
/// names over flow_estimator)─▶ mel ─HiftVocoder─▶ trim_fade ─▶ wav, with the chunk's CFM noise
/// and HiFT source draws from a `ChatterboxDraws`.
public struct S3GenHost {
    public let flowSolver: FlowSolver
    public let vocoder: HiftVocoder

    public init(flow: FlowTables, hift: HiftTables, manifest: Manifest, config: BundleConfig) throws {
        let hiftSizes = manifest.graphs[HiftVocoder.trunkGraph]?.meta["buckets"]?.arrayValue?.compactMap { $0["F"]?.intValue }
        flowSolver = FlowSolver(tables: flow, encoderBuckets: try .oneDim("N", sizes: config.sizes("encoder_tokens")),
                                estimatorBuckets: try .oneDim("F", sizes: config.sizes("estimator_frames")))
        vocoder = HiftVocoder(tables: hift, buckets: try .oneDim("F", sizes: hiftSizes ?? config.sizes("vocoder_frames")))
    }

    /// The CFM's noise frames for `tokens` speech tokens: ratio x (prompt + speech tokens).
    public func noiseFrames(prompt: some S3GenPrompt, tokens: Int) -> Int {
        flowSolver.tables.tokenMelRatio * (prompt.promptTokens.count + tokens)
    }

    public func flow(runner: GraphRunner, speechTokens: [Int], prompt: some S3GenPrompt, noise: [Float], steps: Int) async throws
        -> FlowResult
    {
        try await flowSolver.inference(runner: runner, voice: prompt, speechTokens: speechTokens.map { Int32($0) }, noise: noise, steps: steps)
    }

    /// The chunk's speech tokens to audio (`synthesize` after T3): flow from the chunk's noise,
    /// HiFT with its source draws, trim_fade when the bundle has one.
    public func speech(runner: GraphRunner, speechTokens: [Int], prompt: some S3GenPrompt, steps: Int, draws: any ChatterboxDraws,
                       chunk: Int) async throws -> (flow: FlowResult, hift: HiftResult, wav: [Float]) {
        let noise = draws.noise(chunk: chunk, frames: noiseFrames(prompt: prompt, tokens: speechTokens.count))
        let f = try await flow(runner: runner, speechTokens: speechTokens, prompt: prompt, noise: noise, steps: steps)
        let hift = vocoder.tables
        let source = draws.hift(chunk: chunk, samples: f.frames * hift.upsample, harmonics: hift.harmonics)
        let h = try await vocoder.vocode(runner: runner, mel: f.mel, frames: f.frames, draws: source)
        return (f, h, hift.trimFade.map { HiftSpectra.trimFade(h.wav, fade: $0) } ?? h.wav)
    }
}
