/// The stream every Speaker returns: `produce` runs in a task of its own and yields chunks; the
/// consumer ending the iteration (cancelled, or the stream dropped) cancels that task, and a
/// thrown error ends the stream with it.
enum SpeechStream {
    typealias Continuation = AsyncThrowingStream<SpeechChunk, any Error>.Continuation

    static func make(_ produce: sending @escaping (Continuation) async throws -> Void) -> AsyncThrowingStream<SpeechChunk, any Error> {
        let (stream, continuation) = AsyncThrowingStream<SpeechChunk, any Error>.makeStream()
        let task = Task {
            do {
                try await produce(continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        // Called on every end; cancelling a task that has already finished does nothing.
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
