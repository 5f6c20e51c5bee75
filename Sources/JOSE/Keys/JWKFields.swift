/// Typed access to JWK members with `malformed_key` errors.
struct JWKFields {
    let object: JSONObject

    init(_ object: JSONObject) { self.object = object }

    func optionalString(_ name: String) throws(JWSKeyError) -> String? {
        guard let value = object[name] else { return nil }
        guard case .string(let string) = value else {
            throw JWSKeyError(.malformedKey, "JWK member \"\(name)\" must be a string.")
        }
        return string
    }

    func string(_ name: String) throws(JWSKeyError) -> String {
        guard let string = try optionalString(name) else {
            throw JWSKeyError(.malformedKey, "JWK member \"\(name)\" is missing.")
        }
        return string
    }

    func optionalBytes(_ name: String) throws(JWSKeyError) -> [UInt8]? {
        guard let text = try optionalString(name) else { return nil }
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else {
            throw JWSKeyError(.malformedKey, "JWK member \"\(name)\" is not canonical unpadded base64url.")
        }
        return bytes
    }

    func bytes(_ name: String) throws(JWSKeyError) -> [UInt8] {
        guard let bytes = try optionalBytes(name) else {
            throw JWSKeyError(.malformedKey, "JWK member \"\(name)\" is missing.")
        }
        return bytes
    }

    func bytes(_ name: String, length: Int) throws(JWSKeyError) -> [UInt8] {
        let value = try bytes(name)
        guard value.count == length else {
            throw JWSKeyError(.malformedKey, "JWK member \"\(name)\" must be \(length) bytes, not \(value.count).")
        }
        return value
    }
}
