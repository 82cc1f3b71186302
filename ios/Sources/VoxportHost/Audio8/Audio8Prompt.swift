import VoxportCore

/// The slow AR's prompt [11, P] from token ids, as `prompt.build_prompt` packs it.
///
/// Row 0: the plain template `plain_prefix + text + tail`, or with a voice
/// `reference_prefix + transcript + speech_header + (semantic_begin + codes[0, t]) +
/// suffix_head + text + tail`. Rows 1..10: the voice's ten books under its frames (row 1
/// repeats book 0), 0 elsewhere (the model adds code embeddings only where row 0 is a semantic
/// id, so those zeros are never read).
public struct Audio8Prompt: Equatable, Sendable {
    public let rows: Int
    public let columns: Int
    /// Row-major [rows, columns].
    public let values: [Int32]

    public init(rows: Int, columns: Int, values: [Int32]) {
        precondition(values.count == rows * columns, "a prompt holds rows x columns values")
        self.rows = rows
        self.columns = columns
        self.values = values
    }

    public func value(row: Int, column: Int) -> Int32 { values[row * columns + column] }

    /// Column `c` top to bottom (what a `frame` call feeds).
    public func column(_ c: Int) -> [Int32] { (0..<rows).map { values[$0 * columns + c] } }

    public static func build(textIDs: [Int32], voice: Audio8Voice?, tables: Audio8Tables) throws -> Audio8Prompt {
        guard !textIDs.isEmpty else {
            throw VoxportError(.user, "audio8_tts: the text to speak is empty (no token ids)")
        }
        try checkIDs(textIDs, tables: tables, what: "text")
        let p = tables.prompt, rows = tables.frame.rows
        var prefix: [Int32], suffix: [Int32], frames = 0
        if let voice {
            guard voice.books == tables.frame.numCodebooks else {
                throw VoxportError(.user, "voice codes have \(voice.books) books, the model has \(tables.frame.numCodebooks)")
            }
            try checkIDs(voice.textIDs, tables: tables, what: "voice transcript")
            if let bad = voice.codes.first(where: { $0 < 0 || Int($0) >= tables.frame.codebookSize }) {
                throw VoxportError(
                    .user, "audio8_tts: reference codes must lie in 0..\(tables.frame.codebookSize - 1), got \(bad)")
            }
            prefix = p.referencePrefix + voice.textIDs + p.speechHeader
            suffix = p.suffixHead + textIDs + p.tail
            frames = voice.frames
        } else {
            prefix = p.plainPrefix + textIDs + p.tail
            suffix = []
        }
        let width = prefix.count + frames + suffix.count
        var values = [Int32](repeating: 0, count: rows * width)
        for (c, id) in prefix.enumerated() { values[c] = id }
        if let voice {
            for t in 0..<frames {
                let c = prefix.count + t
                values[c] = tables.tokens.semanticBegin + voice.code(book: 0, frame: t)
                for b in 0..<voice.books { values[(b + 1) * width + c] = voice.code(book: b, frame: t) }
            }
        }
        for (i, id) in suffix.enumerated() { values[prefix.count + frames + i] = id }
        return Audio8Prompt(rows: rows, columns: width, values: values)
    }

    /// `prompt.check_budget`: prompt + frames must fit the KV rows (the pipeline asks before it
    /// builds anything else), with the Python message.
    public static func checkBudget(columns: Int, maxFrames: Int, tables: Audio8Tables) throws {
        let slots = tables.frame.maxSeqLen
        if columns + maxFrames > slots {
            throw VoxportError(
                .user,
                "audio8_tts: the prompt is \(columns) tokens and \(maxFrames) frames were asked for: "
                    + "\(columns + maxFrames) > the model's \(slots) slots. Split the text (a few sentences at a time), "
                    + "use a shorter reference clip, or ask for fewer frames")
        }
    }

    static func checkIDs(_ ids: [Int32], tables: Audio8Tables, what: String) throws {
        if let (i, bad) = ids.enumerated().first(where: { $0.element < 0 || Int($0.element) >= tables.tokens.vocabSize }) {
            throw VoxportError(
                .user, "audio8_tts: \(what) token id \(bad) at position \(i) is outside the vocabulary (0..\(tables.tokens.vocabSize - 1)): "
                    + "make the ids with `voxport tokenize audio8_tts` for this bundle")
        }
    }
}
