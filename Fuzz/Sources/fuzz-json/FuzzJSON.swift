import FuzzSupport
import JOSE

/// Whatever the strict parser accepts must serialize to text it accepts again as the same value, and serializing
/// that value must give the same text: tokens and key files are re-read after the gateway writes them.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let value = try? JSON.parse(fuzzInput(data, size)) else { return 0 }
    let text = JSON.serialize(value)
    let reparsed: JSONValue
    do { reparsed = try JSON.parse(text) } catch {
        invariant(false, "the parser refuses its own serialization (\(error)): \(String(decoding: text, as: UTF8.self))")
        return 0
    }
    invariant(reparsed == value, "serialize then parse changed the value: \(String(decoding: text, as: UTF8.self))")
    invariant(JSON.serialize(reparsed) == text, "serialization is not stable")
    return 0
}
