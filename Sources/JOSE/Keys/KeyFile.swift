internal import Foundation

/// Loads whatever a key file holds, detected by content: service-account JSON, JWKS, single JWK, or PEM
/// (private key, public key or certificate). For the CLI's `--key FILE`.
public enum KeyFile {
    /// The keys in the file at `path`. `algorithm` binds PEM keys and JWKs (alone or in a JWKS) that have no "alg";
    /// a JWK's own "alg" wins. `keyID` applies to PEM only.
    public static func load(
        contentsOf path: String,
        algorithm: JWSAlgorithm? = nil,
        keyID: String? = nil
    ) throws -> [JWSKey] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JWSKeyError(.malformedKey, "Cannot read key file \(path).")
        }
        return try load(bytes: [UInt8](data), algorithm: algorithm, keyID: keyID)
    }

    /// The keys in file contents already in memory (same detection as `load(contentsOf:…)`).
    public static func load(bytes: [UInt8], algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws -> [JWSKey] {
        // A UTF-8 byte-order mark counts only as the exact EF BB BF at the very start, then whitespace.
        let afterMark = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let start = bytes[afterMark...].firstIndex { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        guard let start, bytes[start] == UInt8(ascii: "{") else {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw JWSKeyError(.malformedKey, "Key file is neither JSON nor PEM text.")
            }
            return [try JWSKey.pem(text, algorithm: algorithm, keyID: keyID)]
        }
        guard case .object(let object) = try JWSKey.parseKeyJSON(Array(bytes[start...])) else {
            throw JWSKeyError(.malformedKey, "Key file JSON is not an object.")
        }
        if object["type"] != nil {
            return [try ServiceAccountKey(json: Array(bytes[start...])).key]
        }
        if object["keys"] != nil {
            return try JWKSet(json: Array(bytes[start...]), algorithm: algorithm).keys
        }
        return [try JWSKey.jwk(object: object, algorithm: algorithm)]
    }
}
