/// spaCy's id of a string (`spacy.strings.get_string_id`, what `doc.to_array` holds for a
/// string attribute): 0 for "", the symbol's number for one of spaCy's symbol names ("X",
/// "_", "det", ...), else the hash of its UTF-8 bytes. Symbols are matched byte for byte (a
/// Swift `String` key would also match a canonically equivalent spelling).
struct SpacyStringIDs: Sendable {
    let symbols: [[UInt8]: UInt64]

    func id(_ s: String) -> UInt64 {
        let bytes = Array(s.utf8)
        if bytes.isEmpty { return 0 }
        if let symbol = symbols[bytes] { return symbol }
        return SpacyHashes.murmurHash64A(bytes, seed: 1)
    }
}
