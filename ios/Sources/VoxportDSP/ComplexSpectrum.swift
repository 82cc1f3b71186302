/// A onesided complex spectrum laid out as torch's `[bins, frames]`, row-major: element
/// (bin k, frame t) at `k * frames + t`. Real and imaginary parts in separate float32 arrays
/// (complex64's precision), so they map straight onto graph inputs.
public struct ComplexSpectrum: Equatable, Sendable {
    public let bins: Int
    public let frames: Int
    public var real: [Float]
    public var imag: [Float]

    public init(bins: Int, frames: Int, real: [Float], imag: [Float]) {
        precondition(real.count == bins * frames && imag.count == bins * frames, "spectrum size mismatch")
        self.bins = bins
        self.frames = frames
        self.real = real
        self.imag = imag
    }

    public subscript(bin: Int, frame: Int) -> (re: Float, im: Float) {
        (real[bin * frames + frame], imag[bin * frames + frame])
    }
}
