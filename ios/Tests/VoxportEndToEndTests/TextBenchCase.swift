import Foundation
import Synchronization
import VoxportCore
import VoxportRunner
import VoxportTestSupport

/// What `text_bench_case.py make` wrote: the reduced bundles the end-to-end cases use, what
/// `voxport tokenize` printed for each text, and each Python front end's error on blank text.
/// Made once per test process, for TextBenchTests and SpeakBenchTests.
struct TextBenchCase {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("text_bench_case.py")

    struct Text {
        let text: String
        /// Model -> tokenize's JSON (parsed).
        let tokenize: [String: Any]
    }

    let bundles: [String: String]
    let texts: [Text]
    let blank: String
    /// Model -> the front end's message for `blank`.
    let blankErrors: [String: String]

    nonisolated(unsafe) static var made: Result<TextBenchCase, Error>?

    static func shared() throws -> TextBenchCase {
        if let made { return try made.get() }
        let result = Result { try make() }
        made = result
        return try result.get()
    }

    static func make() throws -> TextBenchCase {
        let dir = try TestScratch.folder("text-bench-case")
        try PythonChild.run(script, ["make", dir.path])
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("case.json"))) as! [String: Any]
        var blank = doc["blank"] as! [String: String]
        let text = blank.removeValue(forKey: "text")!
        let texts = (doc["cases"] as! [[String: Any]]).map { c in
            Text(text: c["text"] as! String, tokenize: c.filter { $0.key != "text" })
        }
        return TextBenchCase(bundles: doc["bundles"] as! [String: String], texts: texts, blank: text, blankErrors: blank)
    }
}

/// A runner that runs nothing and counts what it was asked: a bench refused before any graph
/// call leaves it at zero.
final class NoGraphRunner: GraphRunner {
    let manifest: Manifest
    private let asked = Mutex(0)

    init(manifest: Manifest) { self.manifest = manifest }

    var calls: Int { asked.withLock { $0 } }

    func run(graph: String, function: String, inputs: [String: Tensor], state: String) async throws -> [String: Tensor] {
        asked.withLock { $0 += 1 }
        throw VoxportError(.io, "NoGraphRunner runs no graph (\(graph).\(function))")
    }

    func resetState(graph: String, state: String) async throws { asked.withLock { $0 += 1 } }

    func close() async {}
}
