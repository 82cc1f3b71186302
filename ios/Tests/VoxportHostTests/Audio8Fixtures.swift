import Foundation
import Synchronization
import VoxportCore
import VoxportHost
import VoxportRunner
import VoxportTestSupport

/// `Fixtures/audio8_tts/`, written by `conversion/audio8_tts/swift_fixtures.py` from the Python
/// host (reduced configuration, stand-in tokenizer, seeded stand-in graph outputs).
enum Audio8Fixtures {
    static let folder = FixtureFolder("audio8_tts")

    static func url(_ rel: String) -> URL { folder.url(rel) }
    static func json<T: Decodable>(_ type: T.Type, _ rel: String) throws -> T { try folder.json(T.self, rel) }
    static func tables() throws -> Audio8Tables { try Audio8Tables.load(url(Audio8Tables.fileName)) }
    static func manifest() throws -> Manifest { try folder.manifest() }

    /// Row-major [rows, columns] from nested lists.
    static func flat(_ rows: [[Int32]]) -> [Int32] { rows.flatMap { $0 } }

    /// Columns [T][books] from [books][T].
    static func columns(_ rows: [[Int32]]) -> [[Int32]] {
        guard let t = rows.first?.count else { return [] }
        return (0..<t).map { c in rows.map { $0[c] } }
    }

    /// sha256 of a float32 array's little-endian bytes (numpy's `tobytes()`).
    static func sha256(_ v: [Float]) -> String {
        var h = SHA256Hasher()
        v.withUnsafeBytes { h.update($0) }
        return h.hexDigest()
    }
}

/// One recorded call (or state reset) of the Python host, as `_save_events` lists it.
struct Audio8Call: Decodable {
    struct Hashed: Decodable {
        let sha256: String
        let shape: [Int]
    }
    let reset: String?
    let graph: String?
    let function: String?
    let state: String?
    let inputs: [String]?
    let hashed: [String: Hashed]?
}

/// A GraphRunner that checks every call and reset of a Swift host against the Python host's
/// recording — graph, function, state, input names, integer inputs exactly, the uniforms by
/// their sha256 — and answers with the recorded outputs.
final class Audio8CheckedRunner: GraphRunner {
    let manifest: Manifest
    let calls: [Audio8Call]
    let inputs: [String: Tensor]
    let outputs: [String: Tensor]
    private struct Progress {
        var position = 0
        var callIndex = 0
    }
    private let progress = Mutex(Progress())
    var position: Int { progress.withLock { $0.position } }

    init(manifest: Manifest, folder: String, calls: [Audio8Call]) throws {
        self.manifest = manifest
        self.calls = calls
        inputs = try NpzArchive.load(Audio8Fixtures.url("\(folder)/calls_in.npz")).arrays
        outputs = try NpzArchive.load(Audio8Fixtures.url("\(folder)/calls_out.npz")).arrays
    }

    var finished: Bool { position == calls.count }

    func fail(_ why: String, at position: Int) -> Error { VoxportError(.user, "step \(position): \(why)") }

    func run(graph: String, function: String, inputs got: [String: Tensor], state: String) async throws -> [String: Tensor] {
        try progress.withLock { try check(&$0, graph: graph, function: function, inputs: got, state: state) }
    }

    private func check(_ p: inout Progress, graph: String, function: String, inputs got: [String: Tensor], state: String)
        throws -> [String: Tensor]
    {
        let position = p.position
        func fail(_ why: String) -> Error { self.fail(why, at: position) }
        guard position < calls.count else { throw fail("the Python host made no more calls (\(graph).\(function))") }
        let c = calls[position]
        guard c.graph == graph, c.function == function, c.state == state else {
            throw fail("Python called \(c.graph ?? "reset \(c.reset ?? "")").\(c.function ?? "") here, not \(graph).\(function)")
        }
        guard Set(c.inputs ?? []) == Set(got.keys) else { throw fail("inputs \(got.keys.sorted()), Python fed \(c.inputs ?? [])") }
        let prefix = String(format: "%03d.", p.callIndex)
        for name in got.keys.sorted() {
            let g = got[name]!
            if let h = c.hashed?[name] {
                guard g.shape == h.shape, Audio8Fixtures.sha256(try g.float32()) == h.sha256 else {
                    throw fail("\(graph).\(function) input \(name) (shape \(g.shape)) differs from the uniforms Python fed")
                }
            } else {
                guard let want = inputs[prefix + name] else { throw fail("no recorded input \(prefix + name)") }
                guard want == g else { throw fail("\(graph).\(function) input \(name): \(g) != recorded \(want)") }
            }
        }
        var out: [String: Tensor] = [:]
        for (k, v) in outputs where k.hasPrefix(prefix) { out[String(k.dropFirst(prefix.count))] = v }
        p.position += 1
        p.callIndex += 1
        return out
    }

    func resetState(graph: String, state: String) async throws {
        try progress.withLock { p in
            guard p.position < calls.count, calls[p.position].reset == graph, calls[p.position].state == state else {
                throw fail("Python did not reset \(graph) here", at: p.position)
            }
            p.position += 1
        }
    }

    func close() async {}
}

struct Audio8PromptFixture: Decodable {
    struct Case: Decodable {
        let ids: [Int32]
        let prompt: [[Int32]]
        let voice_codes: [[Int32]]?
        let voice_text_ids: [Int32]?
    }
    struct Budget: Decodable {
        let ids: [Int32]
        let fits: Int
        let columns: Int
        let error: String
    }
    let cases: [Case]
    let budget: Budget
}

struct Audio8UniformsFixture: Decodable {
    struct Case: Decodable {
        let seed: UInt64
        let step: Int
        let slow_head: [Float]
        let fast_tail: [Float]
        let slow_sha256: String
        let fast_sha256: String
        let slow_shape: [Int]
        let fast_shape: [Int]
    }
    let cases: [Case]
}

struct Audio8FramesFixture: Decodable {
    struct Case: Decodable {
        let name: String
        let prompt: [[Int32]]
        let max_frames: Int
        let uniform_seed: UInt64
        let calls: [Audio8Call]
        let windows: [[Int32]]
        let semantics: [Int32]
        let codes: [[Int32]]
        let finished: Bool
        let prefill_calls: Int
    }
    let cases: [Case]
}

struct Audio8CodecFixture: Decodable {
    struct Plan: Decodable {
        let total: Int
        let window: Int
        let context: Int
        let plan: [[Int]]
    }
    struct Prepare: Decodable {
        let codes: [[Int32]]
        let kept: [[Int32]]
        let frames: Int
        let dropped: Int
        let clamped_by_book: [Int]
    }
    let plans: [Plan]
    let prepare: Prepare
}

struct Audio8PipelineFixture: Decodable {
    struct Piece: Decodable {
        let text: String
        let ids: [Int32]
        let prompt_columns: Int
        let codes: [[Int32]]
        let finished: Bool
        let samples: Int
        let clamped: Int
        let windows: Int
    }
    let text: String
    let stream: Bool
    let seed: Int
    let max_frames: Int
    let voice: String?
    let pieces: [Piece]
    let calls: [Audio8Call]
    let audio: String
    let audio_samples: Int
}

extension Audio8Prompt {
    /// A prompt from the fixture's nested rows.
    static func fixture(_ rows: [[Int32]]) -> Audio8Prompt {
        Audio8Prompt(rows: rows.count, columns: rows[0].count, values: Audio8Fixtures.flat(rows))
    }
}
