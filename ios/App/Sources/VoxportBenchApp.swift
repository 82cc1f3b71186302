// The bench app: runs VoxportBench once from its launch environment (`voxport device-bench`
// launches it with the VP_* variables through `devicectl device process launch`), with relative
// paths inside Documents (where `voxport sideload` puts bundles under models/), and writes
// result.json / audio.wav into Documents/VP_OUT. Launched without VP_BENCH, it is a text field
// that speaks through a sideloaded bundle (SpeakView).
import SwiftUI
import VoxportBench
import VoxportCore

@main
struct VoxportBenchApp: App {
    @State private var status = BenchStatus()

    var body: some Scene {
        WindowGroup {
            if ProcessInfo.processInfo.environment["VP_BENCH"] != nil {
                VStack(alignment: .leading, spacing: 8) {
                    Text("Voxport Bench").font(.headline)
                    Text(status.text).font(.system(.body, design: .monospaced))
                }
                .padding()
                .task { await status.runFromLaunchEnvironment() }
            } else {
                SpeakView()
            }
        }
    }
}

@MainActor
@Observable
final class BenchStatus {
    var text = "no VP_BENCH in the launch environment: launch with `voxport device-bench`"

    func runFromLaunchEnvironment() async {
        let env = ProcessInfo.processInfo.environment
        guard env["VP_BENCH"] != nil else { return }
        let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
        text = "running \(env["VP_BENCH"]!)…"
        // Off the main actor: a bench is minutes of graph calls and host math, awaited there.
        let outcome: String = await Task.detached(priority: .userInitiated) {
            do {
                let bench = try BenchEnvironment(env, base: documents)
                let result = try await BenchDriver.run(bench) { print($0) }
                return "wrote \(bench.out.path)/result.json\nRTF \(result["rtf"] ?? "-"), load \(result["load_ms"] ?? "-") ms"
            } catch {
                // The failure goes where the result would, so `device-bench` pulls a reason back.
                let out = documents.appendingPathComponent(env["VP_OUT"] ?? "voxport-bench-out")
                try? FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                let doc: [String: Any] = ["format": BenchDriver.resultFormat, "error": "\(error)"]
                if let data = try? JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys]) {
                    try? data.write(to: out.appendingPathComponent("result.json"), options: .atomic)
                }
                return "error: \(error)"
            }
        }.value
        text = outcome
    }
}
