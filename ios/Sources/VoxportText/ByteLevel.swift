/// GPT-2's byte-level alphabet: every UTF-8 byte as a printable scalar (what a ByteLevel
/// pre-tokenizer hands the BPE model).
enum ByteLevel {
    /// byte -> scalar value, as `bytes_to_unicode` builds it.
    static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var extra: UInt32 = 0
        for b in 0..<256 {
            let printable = (0x21...0x7E).contains(b) || (0xA1...0xAC).contains(b) || (0xAE...0xFF).contains(b)
            if printable {
                table[b] = UInt32(b)
            } else {
                table[b] = 256 + extra
                extra += 1
            }
        }
        return table
    }()

    /// The piece's UTF-8 bytes, each as its byte-level scalar.
    static func map(_ piece: ArraySlice<UInt32>) -> [UInt32] {
        var out: [UInt32] = []
        out.reserveCapacity(piece.count * 2)
        for s in piece {
            UTF8.encode(Unicode.Scalar(s)!) { out.append(table[Int($0)]) }
        }
        return out
    }
}
