// The app's text field: pick a sideloaded bundle (Documents/models/<bundle>/), type, hear it.
// Everything below the view is VoxportKit code compiled and tested on Linux (SpeakableBundles,
// BundleSpeaker, UtteranceRecorder, CoreAIRunner); this file itself is SwiftUI and AVFoundation,
// which only Xcode builds (README.md).
import AVFoundation
import SwiftUI
import VoxportCore
import VoxportHost
import VoxportRunner

struct SpeakView: View {
    @State private var model = SpeakModel()

    var body: some View {
        VStack(alignment: .leading, spacing: 8) {
            Picker("Bundle", selection: $model.selected) {
                ForEach(model.bundles, id: \.name) { Text("\($0.name) (\($0.model), \($0.precision))").tag(Optional($0.name)) }
            }
            TextField(model.hint, text: $model.text, axis: .vertical).lineLimit(3...8)
            HStack {
                Button("Speak") { model.speak() }.disabled(model.isSpeaking || model.selected == nil)
                Button("Stop") { model.stop() }.disabled(!model.isSpeaking)
            }
            Text(model.status).font(.system(.footnote, design: .monospaced))
        }
        .padding()
        .task { model.refresh() }
    }
}

@MainActor
@Observable
final class SpeakModel {
    var bundles: [SpeakableBundles.Entry] = []
    var selected: String?
    var text = "Hello there."
    var status = "sideload a bundle with `voxport sideload`, then speak"
    private(set) var isSpeaking = false
    private var task: Task<Void, Never>?
    private var player: AVAudioPlayer?
    private let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]

    var hint: String { SpeakableBundles.inputHint(model: entry?.model ?? "") }
    private var entry: SpeakableBundles.Entry? { bundles.first { $0.name == selected } }

    func refresh() {
        bundles = SpeakableBundles.list(in: documents.appendingPathComponent("models"))
        if entry == nil { selected = bundles.first?.name }
    }

    func speak() {
        guard let entry else { return }
        let (text, wav) = (text, documents.appendingPathComponent("speech.wav"))
        isSpeaking = true
        status = "opening \(entry.name) (every hash verified)…"
        // Off the main actor: seconds of graph calls and host math. Stop cancels this task, and
        // the Speaker stops before its next graph call.
        task = Task.detached(priority: .userInitiated) { [weak self] in
            let outcome: String
            do {
                #if canImport(CoreAI)
                    let runner = try CoreAIRunner(bundle: entry.folder)
                #else
                    throw VoxportError(.user, "this build has no Core AI (the iOS simulator lacks it): run on a device with iOS or macOS 27")
                #endif
                let speaker = try BundleSpeaker.open(entry.folder, runner: runner).speaker
                // Bad text throws here, with the same words `voxport speak` uses, before any graph runs.
                let utterance = try await UtteranceRecorder.record(try speaker.speak(text), sampleRate: speaker.sampleRate) { p in
                    let line = String(format: "piece %d/%d, %.1f s of audio after %.1f s (first sound after %.2f s)",
                                      p.piece + 1, p.pieceCount, p.audioSeconds, p.elapsedSeconds, p.firstAudioSeconds)
                    Task { @MainActor in self?.status = line }
                }
                await runner.close()
                try utterance.writeWAV(to: wav)
                outcome = String(format: "%.1f s of audio in %.1f s (RTF %.2f), first sound after %.2f s; wrote Documents/speech.wav",
                                 utterance.audioSeconds, utterance.totalSeconds, utterance.realTimeFactor, utterance.firstAudioSeconds ?? 0)
                await self?.play(wav)
            } catch is CancellationError {
                outcome = "stopped"
            } catch {
                outcome = "error: \(error)"
            }
            await self?.finish(outcome)
        }
    }

    func stop() { task?.cancel() }

    private func play(_ wav: URL) {
        player = try? AVAudioPlayer(contentsOf: wav)
        player?.play()
    }

    private func finish(_ outcome: String) {
        status = outcome
        isSpeaking = false
    }
}
