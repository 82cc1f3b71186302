import Foundation
import VoxportHost

/// When a speaking pass's audio was ready, in ms from the pass's start: the first chunk that
/// holds samples (what a listener waits for) and the end of the whole utterance.
public struct SpeechTiming: Sendable {
    /// nil when no chunk held a sample (random weights that drew no speech).
    public let firstAudioMilliseconds: Double?
    public let utteranceMilliseconds: Double
}

/// The clock of one speaking pass, started with the pass: it notes the first audio it is shown,
/// from a Speaker's stream or a host's per-piece callback.
final class SpeechClock {
    private let start = DispatchTime.now().uptimeNanoseconds
    private var firstAudio: Double?

    var elapsedMilliseconds: Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }

    func audio(_ samples: [Float]) {
        if firstAudio == nil, !samples.isEmpty { firstAudio = elapsedMilliseconds }
    }

    /// The utterance ends now.
    func finish() -> SpeechTiming {
        SpeechTiming(firstAudioMilliseconds: firstAudio, utteranceMilliseconds: elapsedMilliseconds)
    }

    /// A Speaker's stream read to its end, as an app plays it: the samples joined, how many
    /// chunks and pieces came, and the timing.
    func drain(_ stream: AsyncThrowingStream<SpeechChunk, any Error>) async throws
        -> (audio: [Float], chunks: Int, pieces: Int, timing: SpeechTiming)
    {
        var audio: [Float] = [], chunks = 0, pieces = 0
        for try await chunk in stream {
            self.audio(chunk.samples)
            audio += chunk.samples
            chunks += 1
            pieces = chunk.pieceCount
        }
        return (audio, chunks, pieces, finish())
    }
}
