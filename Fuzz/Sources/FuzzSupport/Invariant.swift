/// Stops the process when a property the code promises does not hold. libFuzzer treats the trap as a crash and
/// saves the input as an artifact, which is the point: a wrong answer is a finding just like a memory error.
public func invariant(
    _ condition: @autoclosure () -> Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition() { fatalError("invariant violated: \(message())", file: file, line: line) }
}

/// The bytes libFuzzer hands to `LLVMFuzzerTestOneInput` (it may pass a null pointer with a zero size).
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}
