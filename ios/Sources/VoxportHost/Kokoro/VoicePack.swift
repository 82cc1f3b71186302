import Foundation
import VoxportCore

/// A voice pack: the reference-style table Kokoro reads one row of per utterance
/// (`voice.py`). Row `n - 1` is `ref_s` [1, 256] for an utterance of `n` phoneme symbols.
public struct VoicePack: Equatable, Sendable {
    public static let rows = 510
    public static let styleDim = 256

    /// float32 [510 * 256], row-major.
    public let values: [Float]

    public init(values: [Float]) throws {
        guard values.count == Self.rows * Self.styleDim else {
            throw VoxportError(.user, "a voice pack holds \(Self.rows) x \(Self.styleDim) floats, got \(values.count)")
        }
        self.values = values
    }

    /// From an `.npz` member: float32 [510, 1, 256] (or [510, 256]).
    public init(array: NpyArray, name: String = "voice") throws {
        guard array.shape == [Self.rows, 1, Self.styleDim] || array.shape == [Self.rows, Self.styleDim] else {
            throw VoxportError(
                .malformedFile, "voice pack \(name) has shape \(array.shape), expected [510, 1, 256]: is it a Kokoro voice?")
        }
        try self.init(values: try array.float32())
    }

    /// `ref_s_for`: the style row for `nPhonemes` symbols (dropped ones count, pads do not).
    public func row(nPhonemes: Int) throws -> [Float] {
        guard (1...Self.rows).contains(nPhonemes) else {
            throw VoxportError(
                .user, "an utterance of \(nPhonemes) phoneme symbols has no voice row (1..\(Self.rows)): split the text")
        }
        let start = (nPhonemes - 1) * Self.styleDim
        return Array(values[start..<start + Self.styleDim])
    }
}

/// The bundle's voices (`voices.npz`, every pack by name) and the blends `load_voice` takes:
/// `"a,b"` is the publisher's float32 mean; `"a:0.7,b:0.3"` is `sum(w_i p_i) / sum(w_i)` in
/// float64, rounded to float32.
public struct VoiceLibrary: Sendable {
    public static let fileName = "voices.npz"
    public let packs: [String: VoicePack]

    public init(packs: [String: VoicePack]) { self.packs = packs }

    public static func load(_ url: URL) throws -> VoiceLibrary {
        let npz = try NpzArchive.load(url)
        var packs: [String: VoicePack] = [:]
        for name in npz.names { packs[name] = try VoicePack(array: try npz.array(name), name: name) }
        return VoiceLibrary(packs: packs)
    }

    public var names: [String] { packs.keys.sorted() }

    public func voice(_ spec: String) throws -> VoicePack {
        let parts = spec.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if spec.trimmingCharacters(in: .whitespaces).isEmpty || parts.contains(where: \.isEmpty) {
            throw VoxportError(.user, "empty voice in \(PythonRepr.string(spec)): choose one of \(names.joined(separator: ", "))")
        }
        let parsed = try parts.map(Self.parsePart)
        let weighted = parsed.map { $0.1 != nil }
        if weighted.contains(true), weighted.contains(false) {
            throw VoxportError(.user, "voice blend \(PythonRepr.string(spec)): give a weight to every voice, or to none")
        }
        let chosen = try parsed.map { name, _ in
            guard let p = packs[name] else {
                throw VoxportError(
                    .user, "unknown voice \(PythonRepr.string(name)): choose one of \(names.joined(separator: ", ")), "
                        + "or a blend like 'a:0.7,b:0.3'")
            }
            return p
        }
        if chosen.count == 1 { return chosen[0] }
        let n = chosen[0].values.count
        var out = [Float](repeating: 0, count: n)
        if !weighted.contains(true) {
            // torch.mean of the stack: a float32 sum in order, divided by the count.
            let k = Float(chosen.count)
            for i in 0..<n {
                var acc: Float = 0
                for p in chosen { acc += p.values[i] }
                out[i] = acc / k
            }
        } else {
            let w = parsed.map { $0.1! }
            let total = w.reduce(0, +)
            let norm = w.map { $0 / total }
            for i in 0..<n {
                var acc = 0.0
                for (p, wi) in zip(chosen, norm) { acc += wi * Double(p.values[i]) }
                out[i] = Float(acc)
            }
        }
        return try VoicePack(values: out)
    }

    /// `name` or `name:weight` (split at the last colon).
    static func parsePart(_ part: String) throws -> (String, Double?) {
        guard let colon = part.lastIndex(of: ":") else { return (part, nil) }
        let name = String(part[..<colon]), weight = String(part[part.index(after: colon)...])
        if name.isEmpty || weight.contains("/") || weight.contains("\\") { return (part, nil) }
        guard let w = Double(weight.trimmingCharacters(in: .whitespaces)) else {
            throw VoxportError(.user, "voice weight \(PythonRepr.string(weight)) in \(PythonRepr.string(part)) is not a number")
        }
        guard w.isFinite, w > 0 else {
            throw VoxportError(.user, "voice weight in \(PythonRepr.string(part)) must be a positive number")
        }
        return (name, w)
    }
}
