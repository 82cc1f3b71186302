import Foundation
import VoxportCore

/// Where an utterance stands while a Speaker speaks it: what an app shows under its text field.
public struct SpeechProgress: Sendable, Equatable {
    /// The piece the last chunk belongs to (0-based) of `pieceCount`, and its text.
    public let piece: Int
    public let pieceCount: Int
    public let text: String
    /// Seconds of audio received so far.
    public let audioSeconds: Double
    /// Seconds since `record` started.
    public let elapsedSeconds: Double
    /// Seconds from the start to the first chunk (the time a listener waits for sound).
    public let firstAudioSeconds: Double
}

/// One spoken utterance, whole: the chunks of a Speaker's stream laid end to end, and the two
/// times a listener feels (to the first sound, to the last).
public struct Utterance: Sendable, Equatable {
    public let samples: [Float]
    public let sampleRate: Int
    /// Each piece's text, in order, once (Audio8 sends several chunks per piece).
    public let pieces: [String]
    public let chunkCount: Int
    /// nil when the Speaker gave no audio at all (a model that drew its end first).
    public let firstAudioSeconds: Double?
    public let totalSeconds: Double

    public var audioSeconds: Double { Double(samples.count) / Double(sampleRate) }

    /// Compute seconds per audio second (below 1: faster than it plays).
    public var realTimeFactor: Double { audioSeconds > 0 ? totalSeconds / audioSeconds : 0 }

    /// The audio as 16-bit PCM WAV, written atomically (as `voxport speak` writes its file).
    public func writeWAV(to url: URL) throws {
        try WavWriter.writePCM16(samples, sampleRate: sampleRate, to: url)
    }
}

/// Drains a Speaker's stream into an `Utterance`, reporting each chunk as it comes: the loop
/// every app writes around `speak`, written once (the app shell and the tests use it).
public enum UtteranceRecorder {
    /// `speaker.speak(text, ...)` recorded: the common case.
    public static func record<S: Speaker>(
        _ speaker: S, _ text: String, voice: S.Voice?, options: sending S.Options,
        progress: (SpeechProgress) -> Void = { _ in }
    ) async throws -> Utterance {
        try await record(try speaker.speak(text, voice: voice, options: options), sampleRate: speaker.sampleRate, progress: progress)
    }

    /// Consumes `stream` (of a Speaker at `sampleRate`) to its end. A thrown error (bad text comes out of `speak` itself; a
    /// graph failure or the caller's cancellation here) leaves nothing behind: the caller has
    /// no utterance, and no file was written. Cancelling the calling task ends the stream, and
    /// with it the Speaker's compute before its next graph call.
    public static func record(
        _ stream: AsyncThrowingStream<SpeechChunk, any Error>, sampleRate: Int,
        progress: (SpeechProgress) -> Void = { _ in }
    ) async throws -> Utterance {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
        var samples: [Float] = []
        var pieces: [String] = []
        var first: Double?
        var chunks = 0
        var lastPiece = -1
        for try await chunk in stream {
            guard chunk.sampleRate == sampleRate else {
                throw VoxportError(.unsupportedFormat, "a chunk at \(chunk.sampleRate) Hz in a \(sampleRate) Hz utterance: pass the Speaker's sampleRate")
            }
            let now = elapsed()
            let firstAt = first ?? now
            first = firstAt
            if chunk.piece != lastPiece {
                pieces.append(chunk.text)
                lastPiece = chunk.piece
            }
            samples += chunk.samples
            chunks += 1
            progress(SpeechProgress(
                piece: chunk.piece, pieceCount: chunk.pieceCount, text: chunk.text,
                audioSeconds: Double(samples.count) / Double(sampleRate), elapsedSeconds: now, firstAudioSeconds: firstAt))
        }
        // The Speakers check cancellation before each graph call; one cancelled after its last
        // call finishes its stream normally, so the caller's cancellation is checked here too.
        try Task.checkCancellation()
        return Utterance(samples: samples, sampleRate: sampleRate, pieces: pieces, chunkCount: chunks,
                         firstAudioSeconds: first, totalSeconds: elapsed())
    }
}
