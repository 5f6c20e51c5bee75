import JOSE

/// A token that passed verification and may be handed out: what the cache holds, and all it holds per context.
///
/// A compact JWS is kept as its header segment, shared with every token of the provider that has the same header
/// (``TokenHeaderSegments``: one per signing key, usually); the start of its payload segment that it has in common
/// with an earlier token of that header, shared with it; the rest of its payload segment; and its signature as bytes
/// rather than base64url (256 bytes for RS256, not 342 characters). The tokens TokenGate's signers make for one
/// provider differ in their payload only from `iat` on (`iss`, `sub` and `aud` come first), so a cached context
/// keeps about 100 of its payload's characters, not 300. It is written out as the exact text it came as: the signature decodes only
/// from canonical base64url, whose encoding gives back the same characters, and text that does not split so is kept
/// as it came.
package struct DeliveredToken: Expiring, Equatable {
    private let storage: Storage
    /// The verified `iat`, epoch seconds.
    package let issuedAt: Int64
    /// The verified `exp`, epoch seconds.
    package let expiresAt: Int64
    /// Whether the token may go into a JSON string as it is: no quote, backslash or control character (true for
    /// every compact JWS, which is base64url and dots). Checked once here, not on every response.
    package let isJSONSafe: Bool

    private enum Storage {
        /// `header` is the header segment and its dot; the payload segment starts with `payload`'s first
        /// `sharedCount` bytes (another token's payload segment), and goes on with `rest`, up to its dot; from
        /// `signatureStart` on, `rest` holds the decoded signature.
        case split(header: [UInt8], payload: [UInt8], sharedCount: UInt16, rest: [UInt8], signatureStart: UInt16)
        /// Anything else, as it came.
        case text(String)
    }

    /// Creates a delivered token from the compact JWS `compact`, sharing its header segment through `headers`.
    package init(compact: String, issuedAt: Int64, expiresAt: Int64, sharingHeaderIn headers: TokenHeaderSegments? = nil) {
        // Over the contiguous UTF-8 bytes: this runs on every mint, and a String's views iterate generically.
        var text = compact
        let (storage, isJSONSafe) = text.withUTF8 { utf8 in
            (Self.split(utf8, headers: headers), utf8.allSatisfy { $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        }
        self.storage = storage ?? .text(compact)
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.isJSONSafe = isJSONSafe
    }

    /// The compact JWS, built anew on each call: writers of responses use ``write(to:)``. Never logged.
    package var compact: String {
        switch storage {
        case .text(let text):
            return text
        case .split:
            return String(unsafeUninitializedCapacity: byteCount) { output in
                var written = 0
                write { piece in
                    UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: output[written...])).copyMemory(from: piece)
                    written += piece.count
                }
                return written
            }
        }
    }

    /// The length of the compact JWS in bytes.
    package var byteCount: Int {
        switch storage {
        case .text(let text):
            text.utf8.count
        case .split(let header, _, let shared, let rest, let start):
            header.count + Int(shared) + Int(start) + Base64URL.encodedCount(of: rest.count - Int(start))
        }
    }

    /// Hands the compact JWS to `sink` in contiguous pieces, in order.
    package func write(to sink: (UnsafeRawBufferPointer) -> Void) {
        switch storage {
        case .text(var text):
            text.withUTF8 { sink(UnsafeRawBufferPointer($0)) }
        case .split(let header, let payload, let shared, let rest, let start):
            header.withUnsafeBytes(sink)
            if shared > 0 { payload.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0[..<Int(shared)])) } }
            rest.withUnsafeBytes { rest in
                sink(UnsafeRawBufferPointer(rebasing: rest[..<Int(start)]))
                Base64URL.withEncoded(UnsafeRawBufferPointer(rebasing: rest[Int(start)...]), sink)
            }
        }
    }

    /// Tokens are equal when their text and their verified times are, however their bytes are kept.
    package static func == (lhs: DeliveredToken, rhs: DeliveredToken) -> Bool {
        lhs.issuedAt == rhs.issuedAt && lhs.expiresAt == rhs.expiresAt && lhs.compact == rhs.compact
    }

    /// Where the header segment's bytes are stored, for tests of the sharing.
    var headerStorage: UnsafeRawPointer? {
        guard case .split(let header, _, _, _, _) = storage else { return nil }
        return header.withUnsafeBytes { $0.baseAddress }
    }

    /// Where the shared start of the payload segment is stored and how long it is, for tests of the sharing.
    var sharedPayload: (storage: UnsafeRawPointer?, count: Int)? {
        guard case .split(_, let payload, let shared, _, _) = storage else { return nil }
        return (payload.withUnsafeBytes { $0.baseAddress }, Int(shared))
    }

    private static func split(_ utf8: UnsafeBufferPointer<UInt8>, headers: TokenHeaderSegments?) -> Storage? {
        guard let headerDot = utf8.firstIndex(of: UInt8(ascii: ".")),
            let payloadDot = utf8[(headerDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
            let signature = Base64URL.decode(utf8: UnsafeBufferPointer(rebasing: utf8[(payloadDot + 1)...])),
            !signature.isEmpty
        else { return nil }
        let payload = UnsafeBufferPointer(rebasing: utf8[(headerDot + 1)...payloadDot])
        guard payload.count <= Int(UInt16.max) else { return nil }
        let header = UnsafeBufferPointer(rebasing: utf8[...headerDot])
        let (sharedHeader, earlierPayload) = headers?.shared(header, payload: payload) ?? (Array(header), [])
        let shared = Self.commonPrefixCount(payload, earlierPayload)
        var rest: [UInt8] = []
        rest.reserveCapacity(payload.count - shared + signature.count)
        rest += payload[shared...]
        rest += signature
        return .split(
            header: sharedHeader, payload: earlierPayload, sharedCount: UInt16(shared), rest: rest,
            signatureStart: UInt16(payload.count - shared))
    }

    private static func commonPrefixCount(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: [UInt8]) -> Int {
        rhs.withUnsafeBufferPointer { rhs in
            var count = 0
            while count < lhs.count, count < rhs.count, lhs[count] == rhs[count] { count += 1 }
            return count
        }
    }
}
