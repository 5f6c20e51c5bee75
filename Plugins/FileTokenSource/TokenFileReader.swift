import Foundation

/// Reads a whole token file, refusing files over a size limit instead of reading them into memory.
enum TokenFileReader {
    /// Why the file could not be read; the description names the path.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            throw Failure(description: exists ? "cannot read \(path)" : "no such file: \(path)")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            // One byte past the limit tells an oversized file from one exactly at it.
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw Failure(description: "cannot read \(path): \(error.localizedDescription)")
        }
        guard data.count <= limit else { throw Failure(description: "\(path) is larger than \(limit) bytes") }
        return [UInt8](data)
    }
}
