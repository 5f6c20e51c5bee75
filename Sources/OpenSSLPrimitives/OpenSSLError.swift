internal import COpenSSL

/// A failed OpenSSL call with the whole thread-local error queue, drained right after the failing call.
public struct OpenSSLError: Error, Sendable, CustomStringConvertible {
    /// The OpenSSL function (or step) that failed, e.g. `"EVP_DigestSign"`.
    public let operation: String
    /// One line per queued OpenSSL error, oldest first (library, reason, file:line). May be empty.
    public let details: [String]

    /// Creates an error from an operation name and queue lines.
    public init(operation: String, details: [String]) {
        self.operation = operation
        self.details = details
    }

    /// `operation: detail; detail`.
    public var description: String {
        details.isEmpty ? "\(operation) failed" : "\(operation) failed: \(details.joined(separator: "; "))"
    }

    // The queue is per thread and every later call may add to it, so it is emptied here, at once, in full
    // (as swift-nio-ssl's buildErrorStack does) rather than reading only the first entry.
    package static func drain(_ operation: String) -> OpenSSLError {
        var details: [String] = []
        while true {
            var file: UnsafePointer<CChar>?
            var line: Int32 = 0
            let code = ERR_get_error_all(&file, &line, nil, nil, nil)
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let location = file.map { " (\(String(cString: $0)):\(line))" } ?? ""
            details.append(text + location)
        }
        return OpenSSLError(operation: operation, details: details)
    }

    /// Empties the queue after an expected failure (a bad signature is an answer, not an error).
    package static func clearQueue() {
        ERR_clear_error()
    }
}

/// Throws the drained queue unless `result` is OpenSSL's success value 1.
package func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(OpenSSLError) {
    guard result == 1 else { throw OpenSSLError.drain(operation()) }
}
