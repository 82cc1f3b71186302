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

/// What S3Gen's flow takes from a voice: the reference's speech tokens, its mel [frames, 80]
/// row-major and the CAMPPlus x-vector [192] (Chatterbox's and Chatterbox Turbo's voices alike).
public protocol S3GenPrompt: Sendable {
    var promptTokens: [Int32] { get }
    var promptFeat: [Float] { get }
    var promptFrames: Int { get }
    var xvector: [Float] { get }
}

extension ChatterboxVoice: S3GenPrompt {}

/// S3Gen's flow on the host (`s3gen/flow/host.py` flow_inference): tokens through `flow_encoder`
/// at its bucket, then the loop `flow_host.npz` names over `flow_estimator` at a frame bucket, the
/// real frames masked in, all float32: `solve_euler` with CFG (Chatterbox: v = (1 + r) v_cond -
/// r v_uncond, x += dt v), or mean-flow `basic_euler` (Turbo, `meanflow` = 1: the cond row alone
/// with the step's end time `r` fed, the linear schedule, x += (r - t) v).
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

    /// The cond row, then (rows 2) the uncond row of zeros; the mask 1 on the real frames of each.
    func estimatorInputs(mu: [Float], total: Int, voice: some S3GenPrompt, frames: Int, rows: Int) -> [String: Tensor] {
        let c = FlowTables.melChannels
        var muP = [Float](repeating: 0, count: rows * c * frames), condP = muP
        for ch in 0..<c {
            for t in 0..<total { muP[ch * frames + t] = mu[ch * total + t] }
            for t in 0..<voice.promptFrames { condP[ch * frames + t] = voice.promptFeat[t * c + ch] }
        }
        let spks = tables.speakerProjection(voice.xvector)
        let mask = (0..<(rows * frames)).map { Float($0 % frames < total ? 1 : 0) }
        return [
            "mask": TensorSlices.floats(mask, [rows, 1, frames]),
            "mu": TensorSlices.floats(muP, [rows, c, frames]),
            "spks": TensorSlices.floats(spks + [Float](repeating: 0, count: (rows - 1) * spks.count), [rows, spks.count]),
            "cond": TensorSlices.floats(condP, [rows, c, frames]),
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
        return try await loop(runner: runner, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule) { x, t, _ in
            ["x": TensorSlices.floats(x + x, [2, c, frames]), "t": TensorSlices.floats([t, t], [2])]
        } step: { x, v, t, r in
            Self.eulerStep(x, velocity: v, dt: r - t, rate: tables.cfgRate)
        }
    }

    /// One mean-flow step on the padded state x [80, frames] from the estimator's velocity
    /// [1, 80, frames]: x + (r - t) v (`_mean_flow_euler`).
    public static func meanFlowStep(_ x: [Float], velocity: [Float], dt: Float) -> [Float] {
        var out = x
        for i in 0..<x.count { out[i] = x[i] + dt * velocity[i] }
        return out
    }

    /// The mean-flow loop (`_mean_flow_euler`): one row, `t` and `r` fed each step; states (noise
    /// first) trimmed to `total` frames.
    public func solveMeanFlow(runner: GraphRunner, constants: [String: Tensor], noise: [Float], total: Int, frames: Int,
                              schedule: [Float]) async throws -> [[Float]] {
        let c = FlowTables.melChannels
        return try await loop(runner: runner, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule) { x, t, r in
            ["x": TensorSlices.floats(x, [1, c, frames]), "t": TensorSlices.floats([t], [1]), "r": TensorSlices.floats([r], [1])]
        } step: { x, v, t, r in
            Self.meanFlowStep(x, velocity: v, dt: r - t)
        }
    }

    /// What both loops share: x padded to the bucket, one `flow_estimator` call per interval of
    /// `schedule` with the constants and the step's own inputs (x, t[, r]), then the step's
    /// update; each state trimmed to `total` frames.
    func loop(runner: GraphRunner, constants: [String: Tensor], noise: [Float], total: Int, frames: Int, schedule: [Float],
              inputs stepInputs: ([Float], Float, Float) -> [String: Tensor],
              step: ([Float], [Float], Float, Float) -> [Float]) async throws -> [[Float]] {
        let c = FlowTables.melChannels
        let function = "estimate_F\(frames)"
        var x = try TensorSlices.resize(TensorSlices.floats(noise, [1, c, total]), axis: 2, to: frames).float32()
        var states = [noise]
        for k in 0..<(schedule.count - 1) {
            let (t, r) = (schedule[k], schedule[k + 1])
            let inputs = constants.merging(stepInputs(x, t, r)) { $1 }
            let out = try await runner.run(graph: Self.estimatorGraph, function: function, inputs: inputs)
            guard let v = out["velocity"] else { throw VoxportError(.bundleIntegrity, "flow_estimator returned no 'velocity'") }
            x = step(x, try v.float32(), t, r)
            states.append(try TensorSlices.resize(TensorSlices.floats(x, [1, c, frames]), axis: 2, to: total).float32())
        }
        return states
    }

    /// The estimator's per-step constants for the loop `tables` names: the CFG pair, or the cond
    /// row alone for mean-flow.
    public func loopInputs(mu: [Float], total: Int, voice: some S3GenPrompt, frames: Int) -> [String: Tensor] {
        estimatorInputs(mu: mu, total: total, voice: voice, frames: frames, rows: tables.meanFlow ? 1 : 2)
    }

    /// The loop `tables` names (`solveMeanFlow` or `solve`) from `loopInputs`' constants.
    public func solveLoop(runner: GraphRunner, constants: [String: Tensor], noise: [Float], total: Int, frames: Int,
                          schedule: [Float]) async throws -> [[Float]] {
        tables.meanFlow
            ? try await solveMeanFlow(runner: runner, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule)
            : try await solve(runner: runner, constants: constants, noise: noise, total: total, frames: frames, schedule: schedule)
    }

    /// The n + 1 times of the loop `tables` names: mean-flow's are linear whatever
    /// `t_scheduler_cosine` says (the publisher's `basic_euler`), CFG's follow it.
    public func schedule(steps: Int) throws -> [Float] {
        try FlowTables.schedule(steps: steps, cosine: tables.meanFlow ? false : tables.cosineSchedule)
    }

    /// Speech tokens -> mel [80, 2 n] after the prompt frames; `noise` is z [80, total].
    public func inference(runner: GraphRunner, voice: some S3GenPrompt, speechTokens: [Int32], noise: [Float], steps: Int = 10) async throws
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
        let states = try await solveLoop(
            runner: runner, constants: loopInputs(mu: mu, total: total, voice: voice, frames: frames), noise: noise,
            total: total, frames: frames, schedule: try schedule(steps: steps))
        let last = states.last!, p = voice.promptFrames, gen = total - p
        var mel = [Float](repeating: 0, count: FlowTables.melChannels * gen)
        for ch in 0..<FlowTables.melChannels {
            for t in 0..<gen { mel[ch * gen + t] = last[ch * total + p + t] }
        }
        return FlowResult(mu: mu, states: states, mel: mel, frames: gen)
    }
}
