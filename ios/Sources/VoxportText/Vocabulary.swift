/// Token text -> id, keyed by the token's exact UTF-8 bytes (never by Swift `String`, whose
/// equality is canonical equivalence), with single scalars in a table of their own (the BPE
/// model's first step looks up one scalar at a time).
struct Vocabulary {
    private(set) var ids: [[UInt8]: Int32] = [:]
    private(set) var scalarIDs: [UInt32: Int32] = [:]
    /// The flawed engine's table (tests only): keyed by `String`, so equivalent tokens collide.
    private(set) var stringIDs: [String: Int32] = [:]
    let flaw: EngineFlaw

    init(_ pairs: [(key: String, value: ExactJSON)], flaw: EngineFlaw = .none) throws {
        self.flaw = flaw
        ids.reserveCapacity(pairs.count)
        for (token, value) in pairs {
            guard let id = value.int, let id32 = Int32(exactly: id), id32 >= 0 else {
                throw TokenizerError("tokenizer.json: vocabulary entry \(token.debugDescription) has no id")
            }
            insert(token, id32)
        }
    }

    /// HF's vocabulary size: its number of entries (`get_vocab_size`), not the largest id.
    var count: Int { ids.count }

    mutating func insert(_ token: String, _ id: Int32) {
        ids[Array(token.utf8)] = id
        let scalars = token.unicodeScalars
        if scalars.count == 1 { scalarIDs[scalars.first!.value] = id }
        if flaw == .stringKeyedMerges { stringIDs[token] = id }
    }

    func id(_ token: String) -> Int32? {
        flaw == .stringKeyedMerges ? stringIDs[token] : ids[Array(token.utf8)]
    }

    func id(bytes: [UInt8]) -> Int32? {
        flaw == .stringKeyedMerges ? stringIDs[String(decoding: bytes, as: UTF8.self)] : ids[bytes]
    }

    func id(scalar: UInt32) -> Int32? {
        flaw == .stringKeyedMerges ? stringIDs[String(Character(Unicode.Scalar(scalar)!))] : scalarIDs[scalar]
    }
}
