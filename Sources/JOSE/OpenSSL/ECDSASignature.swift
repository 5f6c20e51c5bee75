internal import COpenSSL
import OpenSSLPrimitives

/// JWS carries ECDSA signatures as fixed-width R‖S (RFC 7518 section 3.4); OpenSSL speaks DER. Converts both ways.
enum ECDSASignature {
    /// DER `ECDSA-Sig-Value` from OpenSSL to R‖S, each half left-padded to the coordinate size.
    static func raw(fromDER der: [UInt8], curve: ECCurve) throws(OpenSSLError) -> [UInt8] {
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw OpenSSLError.drain("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(signature) }
        // get0: r and s stay owned by the ECDSA_SIG.
        guard let r = ECDSA_SIG_get0_r(signature), let s = ECDSA_SIG_get0_s(signature) else {
            throw OpenSSLError.drain("ECDSA_SIG_get0")
        }
        let size = curve.coordinateLength
        var output = [UInt8](repeating: 0, count: 2 * size)
        let written = output.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(r, buffer.baseAddress, Int32(size)) + BN_bn2binpad(s, buffer.baseAddress! + size, Int32(size))
        }
        guard written == 2 * size else { throw OpenSSLError.drain("BN_bn2binpad") }
        return output
    }

    /// R‖S to DER, or nil for a wrong length or a zero half (OpenSSL's verify then refuses r or s ≥ n).
    static func der(fromRaw raw: [UInt8], curve: ECCurve) -> [UInt8]? {
        let size = curve.coordinateLength
        guard raw.count == 2 * size else { return nil }
        let rBytes = raw[..<size]
        let sBytes = raw[size...]
        guard rBytes.contains(where: { $0 != 0 }), sBytes.contains(where: { $0 != 0 }) else { return nil }
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = rBytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        let s = sBytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        // set0 takes ownership of r and s only on success.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
