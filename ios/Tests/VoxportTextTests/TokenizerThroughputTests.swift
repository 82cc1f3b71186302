import Foundation
import XCTest

@testable import VoxportText

/// Tokens per second over the whole corpus (build with `-c release` for a number worth
/// reporting); `tokenizers`' own figure comes from the same corpus in Python (see the issue).
final class TokenizerThroughputTests: XCTestCase {
    func testThroughputOnTheCorpus() throws {
        let corpus = try TextFixtures.corpus()
        for name in [TextFixtures.Name.whisper, .qwen2, .chatterboxShaped] {
            let start = Date()
            let tokenizer = try Tokenizer(json: try name.tokenizerJSON())
            let load = Date().timeIntervalSince(start)
            var best = Double.infinity, tokens = 0
            for _ in 0..<3 {
                let t0 = Date()
                tokens = 0
                for s in corpus.strings { tokens += try tokenizer.encode(s).count }
                best = min(best, Date().timeIntervalSince(t0))
            }
            XCTAssertGreaterThan(tokens, 0)
            print(String(format: "[throughput] %@: %d tokens in %.3f s = %.0f tokens/s (load %.2f s)", name.rawValue, tokens, best, Double(tokens) / best, load))
        }
    }
}
