import Foundation

/// Mono WAV files. `pcm16` matches `conversion/core/audio_io.write_wav` byte for byte (it
/// goes through libsndfile 1.2, bundled with soundfile 0.14): samples clipped to [-1, 1] by
/// the Python side, then libsndfile scales by 32768, rounds down and clips to the int16 range
/// (so 1.0 -> 32767, -1.0 -> -32768), under the same 44-byte RIFF header. Measured against
/// the fixture, not assumed: scaling by 32767 or rounding to nearest disagree on ~half the
/// samples. Non-finite samples are refused, as there.
public enum WavWriter {
    public static func pcm16(_ samples: [Float], sampleRate: Int) throws -> Data {
        try check(samples, sampleRate)
        var body = Data(capacity: samples.count * 2)
        for x in samples {
            let scaled = (min(max(x, -1), 1) * 32768).rounded(.down)  // exact: 32768 is a power of 2
            let v = Int16(min(scaled, 32767))
            append(&body, UInt16(bitPattern: v))
        }
        return header(format: 1, bitsPerSample: 16, sampleRate: sampleRate, dataBytes: body.count, extended: false) + body
    }

    /// IEEE-float WAV (format 3) with the `cbSize` field and `fact` chunk the spec asks of
    /// non-PCM formats. Samples are written as they are (not clipped).
    public static func float32(_ samples: [Float], sampleRate: Int) throws -> Data {
        try check(samples, sampleRate)
        var body = Data(capacity: samples.count * 4)
        for x in samples { append(&body, x.bitPattern) }
        var out = header(format: 3, bitsPerSample: 32, sampleRate: sampleRate, dataBytes: body.count, extended: true)
        out.append(body)
        return out
    }

    /// Written atomically, like the Python writer: a reader never sees half a file.
    public static func writePCM16(_ samples: [Float], sampleRate: Int, to url: URL) throws {
        try FileIO.write(try pcm16(samples, sampleRate: sampleRate), to: url)
    }

    public static func writeFloat32(_ samples: [Float], sampleRate: Int, to url: URL) throws {
        try FileIO.write(try float32(samples, sampleRate: sampleRate), to: url)
    }

    private static func check(_ samples: [Float], _ sampleRate: Int) throws {
        guard sampleRate > 0, sampleRate <= 1 << 28 else {
            throw VoxportError(.user, "sample rate \(sampleRate) is out of range")
        }
        if !samples.allSatisfy(\.isFinite) {
            throw VoxportError(.user, "refusing to write the audio: it has NaN or infinite samples")
        }
    }

    private static func header(format: UInt16, bitsPerSample: UInt16, sampleRate: Int, dataBytes: Int, extended: Bool) -> Data {
        let blockAlign = bitsPerSample / 8
        let fmtSize: UInt32 = extended ? 18 : 16
        let factBytes = extended ? 12 : 0
        var h = Data()
        h.append(contentsOf: Array("RIFF".utf8))
        append(&h, UInt32(4 + (8 + Int(fmtSize)) + factBytes + 8 + dataBytes))
        h.append(contentsOf: Array("WAVEfmt ".utf8))
        append(&h, fmtSize)
        append(&h, format)
        append(&h, UInt16(1))  // mono
        append(&h, UInt32(sampleRate))
        append(&h, UInt32(sampleRate) * UInt32(blockAlign))
        append(&h, blockAlign)
        append(&h, bitsPerSample)
        if extended {
            append(&h, UInt16(0))  // cbSize
            h.append(contentsOf: Array("fact".utf8))
            append(&h, UInt32(4))
            append(&h, UInt32(dataBytes) / UInt32(blockAlign))  // frames
        }
        h.append(contentsOf: Array("data".utf8))
        append(&h, UInt32(dataBytes))
        return h
    }

    private static func append<T: FixedWidthInteger>(_ d: inout Data, _ v: T) {
        withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) }
    }
}
