import FuzzSupport
import JOSE
import TokenGateCore

@testable import LinkedUpstreamResponseMapping

// LinkedUpstreamResponseMapping is the UpstreamTokenServer plugin's own UpstreamResponseMapping.swift (see Package.swift).
let file = ConfigFile(path: "/nonexistent-tokengate-fuzz/config.yaml", environment: [:])
let now: Int64 = 1_800_000_000

/// An upstream token server's answer, read through a `response:` mapping. The input is the mapping's YAML, a NUL
/// byte, then the response body (no NUL: all body, default mapping). A token comes back only if the body is a
/// JSON object whose token member is that non-empty string, and a claimed expiry only if the mapping names one and
/// the body holds a number there.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpstreamResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let mapping: UpstreamResponseMapping
    let body: [UInt8]
    if let nul = input.firstIndex(of: 0) {
        guard let node = try? ConfigNode.parse(Array(input[..<nul]), file: file),
            let parsed = try? UpstreamResponseMapping.parse(node)
        else { return 0 }
        mapping = parsed
        body = Array(input[(nul + 1)...])
    } else {
        mapping = UpstreamResponseMapping()
        body = input
    }
    invariant(!mapping.tokenKey.isEmpty, "a mapping parsed with an empty tokenKey")
    invariant(mapping.expiry.map { $0.key != mapping.tokenKey } ?? true, "a mapping parsed with expiryKey == tokenKey")
    guard let parsed = try? mapping.extract(from: body, now: now) else { return 0 }
    guard case .object(let object)? = try? JSON.parse(body) else {
        invariant(false, "read a token out of a body that is not a JSON object")
        return 0
    }
    invariant(!parsed.token.isEmpty, "read an empty token")
    invariant(object[mapping.tokenKey] == .string(parsed.token), "the token is not the body's token member")
    let claimed: JSONValue? = mapping.expiry.flatMap { object[$0.key] }
    let isNumber: Bool =
        switch claimed {
        case .integer?: true
        case .double(let double)?: abs(double) < 1e15
        default: false
        }
    invariant(
        (parsed.claimedExpiry != nil) == isNumber, "claimed expiry \(String(describing: parsed.claimedExpiry)) from \(String(describing: claimed))")
    return 0
}
