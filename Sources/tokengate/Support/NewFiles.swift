import Foundation

/// Files a command creates together, none of which may already exist: key material is never overwritten.
struct NewFiles {
    struct File {
        let path: String
        let contents: [UInt8]
        let mode: mode_t
    }

    private(set) var files: [File] = []

    mutating func add(_ path: String, _ contents: [UInt8], mode: mode_t) {
        files.append(File(path: path, contents: contents, mode: mode))
    }

    /// Exit status 2 naming every one of `paths` already there; called before a key is made or anything written.
    static func refuseExisting(_ paths: [String]) throws(CLIFailure) {
        let existing = paths.filter { FileManager.default.fileExists(atPath: $0) }
        guard existing.isEmpty else {
            let verb = existing.count == 1 ? "exists" : "exist"
            throw CLIFailure(.usage, "\(existing.joined(separator: ", ")) already \(verb); not overwriting a key")
        }
    }

    /// Creates `directory` if missing, then every file; on any failure removes the files this call created.
    func write(into directory: String) throws(CLIFailure) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIFailure(.usage, "\(directory): cannot create the directory: \(error.localizedDescription)")
        }
        var created: [String] = []
        for file in files {
            do throws(CLIFailure) {
                try Self.create(file)
                created.append(file.path)
            } catch {
                for path in created { unlink(path) }
                throw error
            }
        }
    }

    // O_EXCL makes "never overwrite" atomic (a file or symlink appearing after refuseExisting() is refused too),
    // and the mode is set on the descriptor, so the key is never readable by others, not even for a moment.
    private static func create(_ file: File) throws(CLIFailure) {
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, file.mode)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "already exists; not overwriting a key" : String(cString: strerror(errno))
            throw CLIFailure(.usage, "\(file.path): \(reason)")
        }
        defer { close(descriptor) }
        do {
            // The umask may have narrowed the mode given to open(2); the file gets exactly the mode printed.
            guard fchmod(descriptor, file.mode) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            try FileHandle(fileDescriptor: descriptor, closeOnDealloc: false).write(contentsOf: file.contents)
        } catch {
            unlink(file.path)
            throw CLIFailure(.usage, "\(file.path): cannot write: \(error.localizedDescription)")
        }
    }
}
