import FuzzSupport
import TokenGateCore

@testable import LinkedQueryParameters

// LinkedQueryParameters is TokenGateHTTP's own QueryParameters.swift, PercentDecoding.swift and RequestLimits.swift
// (see Package.swift).
let limits = RequestLimits()

/// The token route's query-string parser, checked against a plain reading of its rules: split on "&" (a trailing
/// "&" adds nothing), the name is the text before the first "=", name and value are percent-decoded as browsers
/// encode (a "+" is a space, a malformed escape stays as it is); refused when there are too many parameters, a value
/// other than a task list is too long, a name repeats or is unknown, or a name or value is not UTF-8 once decoded.
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
            let rawName = Array(part[..<(equals ?? part.endIndex)])
            let rawValue = equals.map { Array(part[($0 + 1)...]) } ?? []
            guard let name = String(validating: decoded(rawName), as: UTF8.self),
                let value = String(validating: decoded(rawValue), as: UTF8.self),
                value.utf8.count <= limits.maxQueryValueBytes || name == "taskIds", result[name] == nil,
                TokenContext.allParameterNames.contains(name)
            else { return nil }
            result[name] = value
        }
        return result
    }

    /// `%XX` decoded and "+" a space; a "%" not followed by two hex digits is kept.
    static func decoded(_ raw: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "%"), index + 2 < raw.count, let high = hex(raw[index + 1]), let low = hex(raw[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(raw[index] == UInt8(ascii: "+") ? UInt8(ascii: " ") : raw[index])
                index += 1
            }
        }
        return output
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        UInt8(String(UnicodeScalar(byte)), radix: 16)
    }
}
