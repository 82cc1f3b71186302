import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What machine a result came from: `uname` (an iPhone reports e.g. `iPhone17,1`), the OS
/// version string, cores; and this process's peak resident memory.
enum DeviceInfo {
    static func describe() -> [String: Any] {
        var u = utsname()
        uname(&u)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        let p = ProcessInfo.processInfo
        return [
            "machine": field(u.machine), "system": field(u.sysname), "release": field(u.release),
            "os": p.operatingSystemVersionString, "cores": p.activeProcessorCount,
        ]
    }

    /// Peak resident set of this process in MB (`getrusage`: KiB on Linux, bytes on Apple).
    static func peakResidentMB() -> Double {
        var usage = rusage()
        #if os(Linux)
            getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
            return Double(usage.ru_maxrss) / 1024
        #else
            getrusage(RUSAGE_SELF, &usage)
            return Double(usage.ru_maxrss) / 1_048_576
        #endif
    }
}
