import FuzzSupport
import JOSE
import OpenSSLPrimitives
import TokenGateCore

/// The `Authorization` header parser, checked against a plain reading of its grammar: `Bearer` in any case, one
/// space, then 1 to 8192 visible ASCII bytes. A credential shaped like a compact JWS (three base64url segments,
/// the first two non-empty) is a session token; anything else is an API key, kept only as its SHA-256.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBearer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let header = String(decoding: fuzzInput(data, size), as: UTF8.self)
    let expected = Reference.credential(in: Array(header.utf8))
    switch Result(catching: { () throws(TokenGateError) in try CallerCredential(authorization: header) }) {
    case .success(.sessionToken(let token)):
        invariant(expected.map { Array(token.utf8) == $0 } == true, "accepted a session token the grammar refuses")
        invariant(Reference.isCompactJWS(Array(token.utf8)), "an API key was taken for a session token")
    case .success(.apiKey(let digest)):
        guard let expected else {
            invariant(false, "accepted an API key the grammar refuses")
            return 0
        }
        invariant(!Reference.isCompactJWS(expected), "a session token was taken for an API key")
        invariant((try? Digest.sha256(expected)) == digest, "the API key digest is not the credential's SHA-256")
    case .failure(let error):
        invariant(expected == nil, "refused a well-formed credential: \(error)")
        invariant(error.code == .unauthenticated, "a bad header is \(error.code), not unauthenticated")
    }
    // Also as an optional header: nil is refused like "".
    invariant((try? CallerCredential(authorization: nil)) == nil, "a missing header was accepted")
    return 0
}

/// The grammar, written for clarity instead of speed.
enum Reference {
    static func credential(in header: [UInt8]) -> [UInt8]? {
        guard let space = header.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        // ASCII case folding only: "BEARER", "bearer" and "bEaReR" name the scheme; nothing else does.
        let folded = header[..<space].map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
        guard folded == Array("bearer".utf8) else { return nil }
        let credential = Array(header[(space + 1)...])
        guard (1...8192).contains(credential.count), credential.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return nil
        }
        return credential
    }

    static func isCompactJWS(_ credential: [UInt8]) -> Bool {
        let segments = credential.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        return segments.count == 3 && !segments[0].isEmpty && !segments[1].isEmpty
            && segments.allSatisfy { $0.allSatisfy(alphabet.contains) }
    }
}
