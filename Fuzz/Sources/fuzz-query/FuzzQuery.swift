import FuzzSupport
import TokenGateCore

@testable import LinkedQueryParameters

// LinkedQueryParameters is TokenGateHTTP's own QueryParameters.swift and RequestLimits.swift (see Package.swift).
let limits = RequestLimits()

/// The token route's query-string parser, checked against a plain reading of its rules: split on "&" (a trailing
/// "&" adds nothing), the name is the text before the first "=", the value is percent-decoded unless its encoding
/// is malformed; refused when there are too many parameters, a value is too long, a name repeats or is unknown.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuery(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let query = String(decoding: fuzzInput(data, size), as: UTF8.self)
    let expected = Reference.parameters(of: query)
    switch Result(catching: { () throws(TokenGateError) in try QueryParameters.parse(query, limits: limits) }) {
    case .success(let parameters):
        invariant(parameters == expected, "parsed \(parameters), the rules give \(String(describing: expected))")
    case .failure(let error):
        invariant(expected == nil, "refused a query the rules accept as \(String(describing: expected))")
        invariant(error.code == .invalidRequest, "a bad query is \(error.code), not invalid_request")
    }
    return 0
}

enum Reference {
    static func parameters(of query: String) -> [String: String]? {
        var parts = Array(query.utf8).split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true { parts.removeLast() }
        guard parts.count <= limits.maxQueryParameters else { return nil }
        var result: [String: String] = [:]
        for part in parts {
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            let name = String(decoding: part[..<(equals ?? part.endIndex)], as: UTF8.self)
            let raw = equals.map { Array(part[($0 + 1)...]) } ?? []
            let value = decoded(raw).map { String(decoding: $0, as: UTF8.self) } ?? String(decoding: raw, as: UTF8.self)
            guard value.utf8.count <= limits.maxQueryValueBytes, result[name] == nil,
                TokenContext.allParameterNames.contains(name)
            else { return nil }
            result[name] = value
        }
        return result
    }

    /// `%XX` decoded; nil when a "%" is not followed by two hex digits.
    static func decoded(_ raw: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        var index = 0
        while index < raw.count {
            if raw[index] != UInt8(ascii: "%") {
                output.append(raw[index])
                index += 1
                continue
            }
            guard index + 2 < raw.count, let high = hex(raw[index + 1]), let low = hex(raw[index + 2]) else { return nil }
            output.append(high << 4 | low)
            index += 3
        }
        return output
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        UInt8(String(UnicodeScalar(byte)), radix: 16)
    }
}
