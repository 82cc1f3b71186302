// voxport-bench: one on-device bench, driven by environment variables (the app shell passes its
// launch environment; on Linux or a Mac `VP_RUNNER=worker swift run -c release voxport-bench`).
// The benches live in the VoxportBench library (Sources/VoxportBench/); see docs/on-device.md.
import Foundation
import VoxportBench
import VoxportCore

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("voxport-bench: error: \(message)\n".utf8))
    exit(code)
}

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("-h") || arguments.contains("--help") {
    print(BenchEnvironment.usage)
    exit(0)
}
let env: BenchEnvironment
do {
    env = try BenchEnvironment(ProcessInfo.processInfo.environment)
} catch {
    fail("\(error)", code: 2)
}
do {
    let result = try await BenchDriver.run(env) { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    let rtf = (result["rtf"] as? Double).map { String(format: "%.3f", $0) } ?? "-"
    // a speaking bench: what a listener waits for; a text bench: the front end's file beside it
    let firstAudio = (result["first_audio_ms"] as? Double).map { ", first audio \(String(format: "%.1f", $0)) ms" } ?? ""
    let text = result["runner"] as? String == "none" ? " and text.json" : ""
    print("wrote \(env.out.path)/result.json\(text) (RTF \(rtf), load \(result["load_ms"] ?? "-") ms\(firstAudio))")
} catch let e as VoxportError where e.kind == .user || e.kind == .bundleNotFound {
    fail(e.message, code: 2)
} catch {
    fail("\(error)", code: 1)
}
