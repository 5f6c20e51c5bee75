import Foundation

/// Finds the `tokengate` executable SwiftPM built beside this test bundle.
///
/// The test target depends on the `tokengate` target, so `swift build --build-tests` builds it into the same
/// products directory as the test binary (`.build/<triple>/debug/`; on macOS the test binary sits inside
/// `TokenGatePackageTests.xctest/Contents/MacOS/`). `TOKENGATE_EXECUTABLE` overrides the search.
enum TokenGateExecutable {
    struct NotFound: Error, CustomStringConvertible {
        let searched: [String]
        var description: String {
            "the tokengate executable was not found; build it first (swift build --build-tests) or set "
                + "TOKENGATE_EXECUTABLE. Looked in:\n" + searched.joined(separator: "\n")
        }
    }

    /// The executable's URL, or `NotFound` listing every place searched.
    static func url() throws -> URL {
        let candidates = candidateURLs()
        if let found = candidates.first(where: isExecutableFile) { return found }
        throw NotFound(searched: candidates.map(\.path))
    }

    private static func candidateURLs() -> [URL] {
        var candidates: [URL] = []
        if let override = ProcessInfo.processInfo.environment["TOKENGATE_EXECUTABLE"], !override.isEmpty {
            candidates.append(URL(fileURLWithPath: override))
        }
        // Beside the test binary, or up to three levels above it (out of an .xctest bundle on macOS).
        var starts: [URL] = []
        if let executable = Bundle.main.executableURL { starts.append(executable.resolvingSymlinksInPath()) }
        if let first = CommandLine.arguments.first, first.contains("/") {
            starts.append(URL(fileURLWithPath: first).resolvingSymlinksInPath())
        }
        starts += Bundle.allBundles.map(\.bundleURL)
        for start in starts {
            var directory = start.deletingLastPathComponent()
            for _ in 0..<4 {
                candidates.append(directory.appending(path: "tokengate"))
                directory = directory.deletingLastPathComponent()
            }
        }
        // Last resort: the package root this file lives in.
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(packageRoot.appending(path: ".build/debug/tokengate"))
        return candidates
    }

    private static func isExecutableFile(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isExecutableFile(atPath: url.path)
    }
}
