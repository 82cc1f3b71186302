import Foundation
import VoxportTestSupport
import XCTest

@testable import VoxportText

/// What `conversion/kokoro/lexicon/g2p_case.py`'s `Recording` (used by g2p_case.py and
/// english_case.py) writes per sentence, read back for MisakiG2PTests and MisakiEnglishTests:
/// spaCy's tokens and tags, and the fallback's answers replayed in order.
enum MisakiRecording {
    typealias Answer = (text: String, phonemes: String?, rating: Int?)

    /// spaCy's tokens, each [text, tag_, whitespace_].
    static func spacyTokens(_ column: ExactJSON) throws -> [MisakiG2P.SpacyToken] {
        try XCTUnwrap(column.array).map { t in
            let a = try XCTUnwrap(t.array)
            return MisakiG2P.SpacyToken(text: try XCTUnwrap(a[0].string), tag: try XCTUnwrap(a[1].string), whitespace: try XCTUnwrap(a[2].string))
        }
    }

    /// The fallback's calls in order, each [token text, token tag, phonemes, rating].
    static func answers(_ column: ExactJSON) throws -> [Answer] {
        try XCTUnwrap(column.array).map { f in
            let a = try XCTUnwrap(f.array)
            return (try XCTUnwrap(a[0].string), a[2].string, a[3].int)
        }
    }
}

/// A fallback that gives the recorded answers in order, each only for the word it was recorded
/// for (scalar by scalar), and keeps every word it was asked for.
final class ReplayedFallback {
    private var answers: ArraySlice<MisakiRecording.Answer>
    private(set) var asked: [String] = []

    init(_ answers: [MisakiRecording.Answer]) { self.answers = answers[...] }

    func callAsFunction(_ tk: MisakiG2PToken) -> (phonemes: String?, rating: Int?) {
        asked.append(tk.text)
        guard let answer = answers.first, answer.text.unicodeScalars.elementsEqual(tk.text.unicodeScalars) else { return (nil, nil) }
        answers.removeFirst()
        return (answer.phonemes, answer.rating)
    }
}
