import Foundation

/// The scratch folders of one test process, all in `voxport-swifttests-<pid>/` under the temp
/// directory, removed when the process exits (`atexit`): a test run leaves nothing behind
/// (`.ci/run` counts what is left: tests/leaks.py). Fixtures shared by a test class live as
/// long as the process, so the process's end, not a test's teardown, removes them; a killed
/// run's folder is named by its pid.
public enum TestScratch {
    public static let root: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("voxport-swifttests-\(ProcessInfo.processInfo.processIdentifier)")
        atexit { try? FileManager.default.removeItem(at: TestScratch.root) }
        return url
    }()

    /// `root/<name>`, made empty (a previous use of the name in this process is removed).
    public static func folder(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
