import Foundation
import Synchronization
import XCTest
import VoxportCore
import VoxportHost
import VoxportRunner

/// A runner that forwards its first `holdAt` calls (and state resets), holds the next one until
/// its task is cancelled and then lets it through (as a real runner finishes a call in flight; a
/// held state reset is answered without the recording),
/// and refuses any after: so a test can cancel the consumer while the Speaker is about to make
/// another call, and count whether the Speaker itself stopped. (Refusing the held call instead
/// would stop a Speaker that never checks for cancellation, and the test could not fail.)
final class GatedRunner: GraphRunner {
    let base: any GraphRunner
    let holdAt: Int
    private struct Counts {
        var attempts = 0
        var neverCancelled = false
        var holding = false
    }
    private let counts = Mutex(Counts())
    /// Calls and resets asked for, the held one and any refused after it included.
    var attempts: Int { counts.withLock { $0.attempts } }
    /// The held call waited 5 s and its task was never cancelled (the stream's end did not
    /// reach the speaking task).
    var neverCancelled: Bool { counts.withLock { $0.neverCancelled } }
    /// A call is held now, waiting for its task's cancellation.
    var holding: Bool { counts.withLock { $0.holding } }

    init(wrapping base: any GraphRunner, holdAt: Int) {
        self.base = base
        self.holdAt = holdAt
    }

    var manifest: Manifest { base.manifest }

    /// Whether this is the held call.
    @discardableResult
    private func enter() async throws -> Bool {
        let index = counts.withLock { c in
            defer { c.attempts += 1 }
            return c.attempts
        }
        if index < holdAt { return false }
        if index > holdAt { throw VoxportError(.user, "call \(index) made after the consumer cancelled") }
        counts.withLock { $0.holding = true }
        defer { counts.withLock { $0.holding = false } }
        let deadline = Date().addingTimeInterval(5)
        while !Task.isCancelled {
            if Date() > deadline {
                counts.withLock { $0.neverCancelled = true }
                throw VoxportError(.user, "the speaking task was never cancelled")
            }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return true
    }

    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        try await enter()
        return try await base.run(graph: graph, function: function, inputs: inputs, state: state)
    }

    func resetState(graph: String, state: String) async throws {
        // A held reset is answered here: the recording may hold nothing past the first piece
        // (Chatterbox's holds one chunk), and a reset has no output to give.
        if try await enter() { return }
        try await base.resetState(graph: graph, state: state)
    }

    func close() async {}
}

enum SpeakerStreams {
    /// Every chunk of the stream, in order.
    static func collect(_ stream: AsyncThrowingStream<SpeechChunk, any Error>) async throws -> [SpeechChunk] {
        var out: [SpeechChunk] = []
        for try await chunk in stream { out.append(chunk) }
        return out
    }

    /// A consumer that cancels itself as soon as it has the first chunk; what it received.
    static func firstThenCancel(_ stream: AsyncThrowingStream<SpeechChunk, any Error>) async throws -> [SpeechChunk] {
        let consumer = Task {
            var got: [SpeechChunk] = []
            for try await chunk in stream {
                got.append(chunk)
                withUnsafeCurrentTask { $0?.cancel() }
            }
            return got
        }
        return try await consumer.value
    }

    /// Long enough for a Speaker that ignored the cancellation to ask for its next call (a
    /// replayed call takes microseconds), then until a held call is let go or times out.
    static func settle(_ runner: GatedRunner) async throws {
        try await Task.sleep(nanoseconds: 300_000_000)
        while runner.holding { try await Task.sleep(nanoseconds: 10_000_000) }
    }
}
