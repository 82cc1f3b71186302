import Foundation

/// Audio8's text front end, as `conversion/audio8_tts/prompt.py` builds the publisher's prompt
/// (processing_arktts.py): text cleaned (`" ".join(text.strip().split())`), the template's
/// segments each encoded on its own without special tokens (merges never cross a segment), the
/// reference transcript tagged `<|speaker:0|>` unless it carries a speaker tag.
public struct Audio8Text: Sendable {
    public static let systemStart = "<|im_start|>system\n"
    public static let plainInstruction = "convert the provided text to speech"
    public static let referenceInstruction = "convert the provided text to speech reference to the following:\n\nText:\n"
    public static let speechHeader = "\n\nSpeech:\n"
    public static let turnEnd = "<|im_end|>\n"
    public static let userStart = "<|im_start|>user\n"
    public static let assistantVoice = "<|im_start|>assistant\n<|voice|>"
    public static let defaultSpeaker = "<|speaker:0|>"
    public static let emptyTextError = "audio8_tts: the text to speak is empty"
    public static let missingTranscriptError =
        "audio8_tts: a reference voice needs its transcript (the publisher's prompt carries the reference's text before its speech): pass the reference text"

    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

    /// The bundle's `tokenizer.json`.
    public init(bundle: URL) throws {
        tokenizer = try Tokenizer(contentsOf: bundle.appendingPathComponent("tokenizer.json"))
    }

    public static func cleanText(_ text: String) -> String {
        PythonText.string(PythonText.collapseSpaces(PythonText.scalars(text)))
    }

    /// `format_reference_text`: `<|speaker:0|>` + the cleaned text, unless it holds
    /// `<\|speaker:\d+\|>` (Python's `\d`: any decimal digit, category Nd).
    public static func formatReferenceText(_ text: String) -> String {
        let cleaned = cleanText(text)
        return hasSpeakerTag(PythonText.scalars(cleaned)) ? cleaned : defaultSpeaker + cleaned
    }

    private static func hasSpeakerTag(_ s: [UInt32]) -> Bool {
        let head = PythonText.scalars("<|speaker:"), tail = PythonText.scalars("|>")
        var i = 0
        while i + head.count <= s.count {
            if s[i..<(i + head.count)].elementsEqual(head) {
                var j = i + head.count
                while j < s.count, isDecimal(s[j]) { j += 1 }
                if j > i + head.count, j + tail.count <= s.count, s[j..<(j + tail.count)].elementsEqual(tail) { return true }
            }
            i += 1
        }
        return false
    }

    /// Python 3.11's `\d`: category Nd in Unicode 14.0.
    private static func isDecimal(_ v: UInt32) -> Bool {
        guard let u = Unicode.Scalar(v), UnicodeVersions.assigned(u, by: UnicodeVersions.python) else { return false }
        return u.properties.generalCategory == .decimalNumber
    }

    /// `template_parts`: (prefix parts, suffix parts); a voice's frames go between them.
    public static func templateParts(text: String, referenceText: String? = nil, withReference: Bool = false) throws
        -> (prefix: [String], suffix: [String])
    {
        let target = cleanText(text)
        if target.isEmpty { throw TextError(emptyTextError) }
        if !withReference {
            return ([systemStart, plainInstruction, turnEnd, userStart, target, turnEnd, assistantVoice], [])
        }
        guard let referenceText, !cleanText(referenceText).isEmpty else { throw TextError(missingTranscriptError) }
        return (
            [systemStart, referenceInstruction, formatReferenceText(referenceText), speechHeader],
            [turnEnd, userStart, target, turnEnd, assistantVoice]
        )
    }

    /// Each part encoded on its own, without special tokens, the ids concatenated (`_encode`).
    public func encode(_ parts: [String]) throws -> [Int32] {
        try parts.flatMap { try tokenizer.encode($0, addSpecialTokens: false) }
    }

    /// Row 0 of the prompt around the frames: (prefix ids, suffix ids).
    public func promptSegments(text: String, referenceText: String? = nil, withReference: Bool = false) throws
        -> (prefix: [Int32], suffix: [Int32])
    {
        let parts = try Self.templateParts(text: text, referenceText: referenceText, withReference: withReference)
        return (try encode(parts.prefix), try encode(parts.suffix))
    }

    /// The TEXT segment's ids, what `Audio8Prompt.build(textIDs:)` takes.
    public func textIDs(_ text: String) throws -> [Int32] {
        let target = Self.cleanText(text)
        if target.isEmpty { throw TextError(Self.emptyTextError) }
        return try encode([target])
    }

    /// A voice's transcript segment (`voice.transcript_ids`).
    public func transcriptIDs(_ referenceText: String) throws -> [Int32] {
        guard !Self.cleanText(referenceText).isEmpty else { throw TextError(Self.missingTranscriptError) }
        return try encode([Self.formatReferenceText(referenceText)])
    }
}
