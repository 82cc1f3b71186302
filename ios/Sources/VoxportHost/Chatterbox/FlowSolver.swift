import Foundation
import VoxportCore
import VoxportRunner

/// The flow's result: the encoder's mu, every Euler state, and the generated mel.
public struct FlowResult: Sendable {
    /// [80, total] row-major (prompt + generated frames).
    public var mu: [Float]
    /// n + 1 states [80, total]: states[0] is the noise.
    public var states: [[Float]]
    /// [80, generated] row-major: the last state after the prompt frames.
    public var mel: [Float]
    public var frames: Int
}

/// S3Gen's flow on the host (`s3gen/flow/host.py` flow_inference): tokens through `flow_encoder`
/// at its bucket, then `solve_euler` with CFG over `flow_estimator` at a frame bucket, the
/// real frames masked in; v = (1 + r) v_cond - r v_uncond, x += dt v, all float32.
public struct FlowSolver {
    public static let encoderGraph = "flow_encoder", estimatorGraph = "flow_estimator"
    public let tables: FlowTables
    public let encoderBuckets: BucketTable
    public let estimatorBuckets: BucketTable

    public init(tables: FlowTables, encoderBuckets: BucketTable, estimatorBuckets: BucketTable) {
        self.tables = tables
        self.encoderBuckets = encoderBuckets
        self.estimatorBuckets = estimatorBuckets
    }

    func checkTokens(_ t: [Int32], _ name: String) throws {
        let bad = t.filter { $0 < 0 || Int($0) >= tables.vocabSize }
        guard bad.isEmpty else {
            throw VoxportError(.user, "\(name): ids \(Array(Set(bad)).sorted().prefix(8)) are outside the speech vocabulary [0, \(tables.vocabSize)): drop special tokens before the flow (the publisher's drop_invalid_tokens)")
        }
    }

    /// mu [80, total] for prompt + speech tokens, the real region of the encoder's output.
    public func encode(runner: GraphRunner, tokens: [Int32], total: Int) async throws -> [Float] {
        let bucket = try encoderBuckets.select([("N", tokens.count)])
        let n = bucket["N"]!
        let out = try await runner.run(
            graph: Self.encoderGraph, function: "encode_\(bucket.label)",
            inputs: ["tokens": TensorSlices.ints(tokens + [Int32](repeating: 0, count: n - tokens.count), [1, n]),
                     "length": TensorSlices.ints([Int32(tokens.count)], [1])])
        guard let mu = out["mu"] else { throw VoxportError(.bundleIntegrity, "flow_encoder returned no 'mu'") }
        return try TensorSlices.resize(mu, axis: 2, to: total).float32()
    }

    /// The estimator's per-step constants for the CFG batch at `frames` (cond row; uncond row
    /// with mu, spks and cond zeroed): mask, mu, spks, cond.
    public func cfgInputs(mu: [Float], total: Int, voice: ChatterboxVoice, frames: Int) -> [String: Tensor] {
        let c = FlowTables.melChannels
        var muP = [Float](repeating: 0, count: 2 * c * frames), condP = muP
        for ch in 0..<c {
            for t in 0..<total { muP[ch * frames + t] = mu[ch * total + t] }
            for t in 0..<voice.promptFrames { condP[ch * frames + t] = voice.promptFeat[t * c + ch] }
        }
        let spks = tables.speakerProjection(voice.xvector)
        let mask = (0..<(2 * frames)).map { Float($0 % frames < total ? 1 : 0) }
        return [
            "mask": TensorSlices.floats(mask, [2, 1, frames]),
            "mu": TensorSlices.floats(muP, [2, c, frames]),
            "spks": TensorSlices.floats(spks + [Float](repeating: 0, count: spks.count), [2, spks.count]),
            "cond": TensorSlices.floats(condP, [2, c, frames]),
        ]
    }

    /// One Euler step on the padded state x [80, frames] from the estimator's CFG pair
    /// [2, 80, frames]: x + dt ((1 + r) v_cond - r v_uncond).
    public static func eulerStep(_ x: [Float], velocity: [Float], dt: Float, rate: Float) -> [Float] {
        let n = x.count
        var out = x
        for i in 0..<n {
            let dxdt = (1 + rate) * velocity[i] - rate * velocity[n + i]
            out[i] = x[i] + dt * dxdt
        }
        return out
    }

    /// The Euler loop: states (noise first) trimmed to `total` frames.
    public func solve(runner: GraphRunner, constants: [String: Tensor], noise: [Float], total: Int, frames: Int,
                      schedule: [Float]) async throws -> [[Float]] {
        let c = FlowTables.melChannels
        let function = "estimate_F\(frames)"
        var x = try TensorSlices.resize(TensorSlices.floats(noise, [1, c, total]), axis: 2, to: frames).float32()
        var states = [noise]
        for k in 0..<(schedule.count - 1) {
            let (t, r) = (schedule[k], schedule[k + 1])
            var inputs = constants
            inputs["x"] = TensorSlices.floats(x + x, [2, c, frames])
            inputs["t"] = TensorSlices.floats([t, t], [2])
            let out = try await runner.run(graph: Self.estimatorGraph, function: function, inputs: inputs)
            guard let v = out["velocity"] else { throw VoxportError(.bundleIntegrity, "flow_estimator returned no 'velocity'") }
            x = Self.eulerStep(x, velocity: try v.float32(), dt: r - t, rate: tables.cfgRate)
            states.append(try TensorSlices.resize(TensorSlices.floats(x, [1, c, frames]), axis: 2, to: total).float32())
        }
        return states
    }

    /// Speech tokens -> mel [80, 2 n] after the prompt frames; `noise` is z [80, total].
    public func inference(runner: GraphRunner, voice: ChatterboxVoice, speechTokens: [Int32], noise: [Float], steps: Int = 10) async throws
        -> FlowResult
    {
        try checkTokens(voice.promptTokens, "prompt_tokens")
        try checkTokens(speechTokens, "speech_tokens")
        let tokens = voice.promptTokens + speechTokens
        let total = tables.tokenMelRatio * tokens.count
        _ = try encoderBuckets.select([("N", tokens.count)])
        let frames = try estimatorBuckets.select([("F", total)])["F"]!
        guard voice.promptFrames <= total else {
            throw VoxportError(.user, "prompt_feat: \(voice.promptFrames) frames, want <= \(total)")
        }
        guard noise.count == FlowTables.melChannels * total else {
            throw VoxportError(.user, "noise: \(noise.count / FlowTables.melChannels) frames, want \(total) ([1, 80, \(total)])")
        }
        let mu = try await encode(runner: runner, tokens: tokens, total: total)
        let constants = cfgInputs(mu: mu, total: total, voice: voice, frames: frames)
        let schedule = try FlowTables.schedule(steps: steps, cosine: tables.cosineSchedule)
        let states = try await solve(runner: runner, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule)
        let last = states.last!, p = voice.promptFrames, gen = total - p
        var mel = [Float](repeating: 0, count: FlowTables.melChannels * gen)
        for ch in 0..<FlowTables.melChannels {
            for t in 0..<gen { mel[ch * gen + t] = last[ch * total + p + t] }
        }
        return FlowResult(mu: mu, states: states, mel: mel, frames: gen)
    }
}
