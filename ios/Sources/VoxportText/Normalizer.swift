import Foundation

/// The tokenizer.json normalizers this module runs exactly: none, NFC (Qwen2), a Sequence of
/// them. Any other is refused by name.
enum Normalizer {
    case nfc
    case sequence([Normalizer])

    init?(_ json: ExactJSON?) throws {
        guard let json, !json.isNull else { return nil }
        switch json["type"]?.string {
        case "NFC": self = .nfc
        case "Sequence":
            self = .sequence(try (json["normalizers"]?.array ?? []).compactMap { try Normalizer($0) })
        case let other: throw TokenizerError("tokenizer.json: normalizer \(other ?? "?") is not supported")
        }
    }

    func apply(_ s: [UInt32], flaw: EngineFlaw = .none) -> [UInt32] {
        switch self {
        case .nfc: return flaw == .foundationNFC ? Self.foundationNFC(s) : Self.nfc(s)
        case .sequence(let steps): return steps.reduce(s) { $1.apply($0, flaw: flaw) }
        }
    }

    /// Canonical composition as tokenizers computes it (`NFC`).
    static func nfc(_ s: [UInt32]) -> [UInt32] { CanonicalComposition.nfc(s) }

    /// The flawed engine's NFC (tests only).
    static func foundationNFC(_ s: [UInt32]) -> [UInt32] {
        PythonText.scalars(PythonText.string(s).precomposedStringWithCanonicalMapping)
    }
}
