/// The three decoded parts of a compact JWS, split and decoded strictly; nothing is verified here.
struct CompactJWS {
    let headerBytes: [UInt8]
    let payload: [UInt8]
    let signature: [UInt8]
    // The token's bytes; its first `signingInputCount` are ASCII "header.payload" exactly as received: the
    // signature covers the encoded text.
    private let bytes: [UInt8]
    private let signingInputCount: Int

    /// Splits on "." without decoding first: five parts are JWE, anything but three is malformed.
    init(_ token: String) throws(JWTValidationError) {
        let bytes = Array(token.utf8)
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.count == 5 {
            throw JWTValidationError(.jweNotSupported, "The token has five segments (JWE); only JWS is supported.")
        }
        guard parts.count == 3 else {
            throw JWTValidationError(.malformed, "The token has \(parts.count) segments; a compact JWS has three.")
        }
        let names = ["header", "payload", "signature"]
        var decoded: [[UInt8]] = []
        for (name, part) in zip(names, parts) {
            guard let value = Base64URL.decode(utf8: part) else {
                throw JWTValidationError(.malformed, "The \(name) segment is not canonical unpadded base64url.")
            }
            decoded.append(value)
        }
        headerBytes = decoded[0]
        payload = decoded[1]
        signature = decoded[2]
        self.bytes = bytes
        signingInputCount = parts[0].count + 1 + parts[1].count
    }

    /// Whether `key` verifies the signature over the signing input (read in place, not copied).
    func isSignatureValid(with key: JWSKey) -> Bool {
        bytes.withUnsafeBytes { token in
            key.isValidSignature(signature, forBytes: UnsafeRawBufferPointer(rebasing: token[..<signingInputCount]))
        }
    }

    /// The header as a JSON object with no duplicate names.
    func header() throws(JWTValidationError) -> JSONObject {
        guard case .object(let header)? = try? JSON.parse(headerBytes) else {
            throw JWTValidationError(.malformed, "The header is not a strict JSON object.")
        }
        return header
    }

    /// The payload as a JSON object with no duplicate names.
    func claims() throws(JWTValidationError) -> JSONObject {
        guard case .object(let claims)? = try? JSON.parse(payload) else {
            throw JWTValidationError(.malformed, "The payload is not a strict JSON object.")
        }
        return claims
    }
}
