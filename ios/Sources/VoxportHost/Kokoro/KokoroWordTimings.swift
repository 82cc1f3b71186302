/// A G2P token as Kokoro's word timing reads it (misaki's `MToken`: text, phonemes, whitespace).
public struct KokoroWordToken: Sendable, Equatable {
    public let text: String
    /// nil: the G2P had no pronunciation for it (it is skipped, but its space still counts).
    public let phonemes: String?
    public let whitespace: String

    public init(text: String, phonemes: String?, whitespace: String) {
        self.text = text
        self.phonemes = phonemes
        self.whitespace = whitespace
    }
}

/// Each word's start and end in a chunk's audio from the predictor's durations: the rule of the
/// publisher's `KPipeline.join_timestamps`, as `conversion/kokoro/text/timings.py` writes it
/// (that file says why each step is there). Durations are frames (1/40 s) per id, pads included;
/// time is counted in half-frames so a space is shared between the words beside it. A phoneme
/// string's length is Python's `len`: Unicode scalars, never grapheme clusters.
public enum KokoroWordTimings {
    static let halfFramesPerSecond = 80.0
    static let leadInFrames = 3

    public static func words(_ tokens: [KokoroWordToken], predDur: [Int]) -> [WordTiming] {
        guard !tokens.isEmpty, predDur.count >= 3 else { return [] }
        var left = 2 * max(0, predDur[0] - leadInFrames), right = left
        var i = 1
        var out: [WordTiming] = []
        for t in tokens {
            if i >= predDur.count - 1 { break }
            guard let phonemes = t.phonemes, !phonemes.isEmpty else {
                if !t.whitespace.isEmpty {
                    // Two ids for the one space the token had: the publisher's count, kept.
                    i += 1
                    left = right + predDur[i]
                    right = left + predDur[i]
                    i += 1
                }
                continue
            }
            let j = i + phonemes.unicodeScalars.count
            if j >= predDur.count { break }
            let space = t.whitespace.isEmpty ? 0 : predDur[j]
            let start = left
            left = right + 2 * predDur[i..<j].reduce(0, +) + space
            out.append(WordTiming(word: t.text, start: Double(start) / halfFramesPerSecond, end: Double(left) / halfFramesPerSecond))
            right = left + space
            i = j + (t.whitespace.isEmpty ? 0 : 1)
        }
        return out
    }
}
