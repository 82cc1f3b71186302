/// The audio end of the host (`host.py`): trim a bucket's waveform, pad `har` to a bucket,
/// join chunks with pauses.
public enum KokoroAudio {
    public static let sampleRate = 24000
    /// Audio samples per alignment frame (F0 runs at 2 per frame, each upsampled x300).
    public static let samplesPerFrame = 600
    public static let defaultPause = 0.2

    /// The real part of a bucket's waveform: `frames * 600` samples.
    public static func trim(_ waveform: [Float], frames: Int) -> [Float] {
        Array(waveform.prefix(frames * samplesPerFrame))
    }

    /// `har` [rows * n] of the real frames zero-padded to a `frames` bucket's STFT length
    /// (`frames * 600 / hop + 1`), row-major [rows, size].
    public static func padHar(_ har: [Float], rows: Int, frames n: Int, bucketFrames: Int, hop: Int = 5) -> [Float] {
        let size = bucketFrames * samplesPerFrame / hop + 1
        var out = [Float](repeating: 0, count: rows * size)
        for r in 0..<rows {
            for t in 0..<min(n, size) { out[r * size + t] = har[r * n + t] }
        }
        return out
    }

    /// The chunks in order, `pause` seconds of silence between consecutive ones (none at the
    /// ends); the gap is `round_half_even(pause * sampleRate)` samples.
    public static func join(_ chunks: [[Float]], sampleRate: Int = sampleRate, pause: Double = defaultPause) -> [Float] {
        let gap = [Float](repeating: 0, count: Int((pause * Double(sampleRate)).rounded(.toNearestOrEven)))
        var out: [Float] = []
        for (i, c) in chunks.enumerated() {
            if i > 0 { out += gap }
            out += c
        }
        return out
    }
}
