/// The RAS window the `frame` graph reads: the last semantic ids drawn, -1 for an empty slot.
///
/// The publisher's `generate` creates `previous` as zeros *after* step 0, so frame 0's semantic
/// never enters the window: it is all -1 for frames 0 and 1, then rolls left and appends one
/// semantic id per frame (`ar/host.py`; the ONNX runtime appends from step 0 and does not
/// reproduce `generate`).
public struct RASWindow: Equatable, Sendable {
    public private(set) var values: [Int32]

    public init(size: Int) { values = [Int32](repeating: -1, count: size) }

    /// After frame `step` fed `semantic` back: empty after step 0, else roll and append.
    public mutating func advance(step: Int, semantic: Int32) {
        if step == 0 {
            values = [Int32](repeating: -1, count: values.count)
        } else if !values.isEmpty {
            values.removeFirst()
            values.append(semantic)
        }
    }
}
