import FuzzSupport
import JOSE

/// JWK and JWKS import (what a JWKS URL or a `keys:` file serves): anything may be refused; every key that loads
/// must pass `KeyChecks`. The first byte picks the algorithm hint for members without "alg", as the config does.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWK(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var bytes = fuzzInput(data, size)
    let hint: JWSAlgorithm?
    if let first = bytes.first, first != UInt8(ascii: "{") {
        bytes.removeFirst()
        let all = JWSAlgorithm.allCases
        hint = Int(first) < all.count ? all[Int(first)] : nil
    } else {
        hint = nil
    }
    if let key = try? JWSKey.jwk(bytes, algorithm: hint) { KeyChecks.check(key) }
    if let set = try? JWKSet(json: bytes, algorithm: hint) {
        for key in set.keys { KeyChecks.check(key) }
        // What a gateway publishes must load again.
        if let published = try? set.publicJSON() {
            invariant((try? JWKSet(json: published)) != nil, "a loaded set's public JWKS does not load")
        }
    }
    return 0
}
