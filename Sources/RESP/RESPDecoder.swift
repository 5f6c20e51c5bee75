package import NIOCore

/// Reads RESP2 and RESP3 values from a byte stream, incrementally: bytes may arrive split anywhere.
///
/// Input is hostile until proven otherwise (a proxy, a compromised server, a TLS-less network): every length, count
/// and depth is checked against ``Limits`` before anything is allocated, and an aggregate is not built until the bytes
/// for it could be there (each element takes at least three bytes), so a claimed count costs nothing.
/// A partial value is re-read from its start when more bytes arrive; the limits bound that work too.
package struct RESPDecoder: NIOSingleStepByteToMessageDecoder {
    package typealias InboundOut = RESPValue

    /// Bounds on what one value may claim.
    package struct Limits: Sendable, Hashable {
        /// Largest bulk string, blob error or verbatim string, in bytes. Default 16 MiB.
        package var maxBulkLength: Int
        /// Most elements in one array, set or push, or pairs in one map or attribute. Default 1,048,576.
        package var maxAggregateCount: Int
        /// Deepest nesting of aggregates; a scalar at the top is depth 0. Default 32.
        package var maxDepth: Int
        /// Longest line (simple string, simple error, number, length), without its `\r\n`. Default 64 KiB.
        package var maxLineLength: Int
        /// Most bytes held for one value that has not fully arrived. Default 64 MiB.
        package var maxPendingBytes: Int

        /// Limits with the defaults above, any of them overridden.
        package init(
            maxBulkLength: Int = 16 << 20, maxAggregateCount: Int = 1 << 20, maxDepth: Int = 32,
            maxLineLength: Int = 64 << 10, maxPendingBytes: Int = 64 << 20
        ) {
            self.maxBulkLength = maxBulkLength
            self.maxAggregateCount = maxAggregateCount
            self.maxDepth = maxDepth
            self.maxLineLength = maxLineLength
            self.maxPendingBytes = maxPendingBytes
        }
    }

    /// The bounds this decoder enforces.
    package let limits: Limits

    /// A decoder enforcing `limits`.
    package init(limits: Limits = Limits()) { self.limits = limits }

    /// The next whole value, consuming its bytes; nil (consuming nothing) when it has not fully arrived.
    package mutating func decode(buffer: inout ByteBuffer) throws(RESPDecodingError) -> RESPValue? {
        var cursor = buffer
        guard let value = try readValue(&cursor, depth: 0) else {
            // Only the incomplete value is left in the buffer: every complete one before it was consumed.
            if buffer.readableBytes > limits.maxPendingBytes { throw .valueTooLarge(limit: limits.maxPendingBytes) }
            return nil
        }
        buffer.moveReaderIndex(to: cursor.readerIndex)
        return value
    }

    /// As ``decode(buffer:)``: a value cut short by the end of the stream is simply not returned.
    package mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws(RESPDecodingError) -> RESPValue? {
        try decode(buffer: &buffer)
    }

    private func readValue(_ cursor: inout ByteBuffer, depth: Int) throws(RESPDecodingError) -> RESPValue? {
        // Attributes precede the value they describe; a loop, not recursion, so a run of them cannot grow the stack.
        while cursor.getInteger(at: cursor.readerIndex, as: UInt8.self) == UInt8(ascii: "|") {
            cursor.moveReaderIndex(forwardBy: 1)
            guard let count = try readCount(&cursor, elementsPerItem: 2, allowsNull: false) else { return nil }
            for _ in 0..<(count ?? 0) * 2 {
                guard try readValue(&cursor, depth: try nested(depth)) != nil else { return nil }
            }
        }
        guard let marker = cursor.readInteger(as: UInt8.self) else { return nil }
        switch marker {
        case UInt8(ascii: "+"):
            guard let line = try readLine(&cursor) else { return nil }
            return .simpleString(line)
        case UInt8(ascii: "-"):
            guard let line = try readLine(&cursor) else { return nil }
            return .error(line)
        case UInt8(ascii: ":"):
            guard let line = try readLine(&cursor) else { return nil }
            guard let value = Int64(String(buffer: line)) else {
                throw .invalidValue("integer \(String(buffer: line).prefix(32))")
            }
            return .integer(value)
        case UInt8(ascii: "_"):
            guard let line = try readLine(&cursor) else { return nil }
            guard line.readableBytes == 0 else { throw .invalidValue("null with content") }
            return .null
        case UInt8(ascii: "#"):
            guard let line = try readLine(&cursor) else { return nil }
            switch String(buffer: line) {
            case "t": return .boolean(true)
            case "f": return .boolean(false)
            default: throw .invalidValue("boolean \(String(buffer: line).prefix(32))")
            }
        case UInt8(ascii: ","):
            guard let line = try readLine(&cursor) else { return nil }
            guard let double = Double(String(buffer: line)) else {
                throw .invalidValue("double \(String(buffer: line).prefix(32))")
            }
            return .double(double)
        case UInt8(ascii: "("):
            guard let line = try readLine(&cursor) else { return nil }
            let text = String(buffer: line)
            let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw .invalidValue("big number \(text.prefix(32))")
            }
            return .bigNumber(text)
        case UInt8(ascii: "$"):
            guard let blob = try readBlob(&cursor, allowsNull: true) else { return nil }
            return .bulkString(blob)
        case UInt8(ascii: "!"):
            guard let blob = try readBlob(&cursor, allowsNull: false), let message = blob else { return nil }
            return .error(message)
        case UInt8(ascii: "="):
            guard let blob = try readBlob(&cursor, allowsNull: false), var text = blob else { return nil }
            guard text.readableBytes >= 4, text.getInteger(at: text.readerIndex + 3, as: UInt8.self) == UInt8(ascii: ":"),
                let format = text.readString(length: 3)
            else { throw .invalidValue("verbatim string without a format") }
            text.moveReaderIndex(forwardBy: 1)
            return .verbatimString(format: format, text: text)
        case UInt8(ascii: "*"):
            guard let count = try readCount(&cursor, elementsPerItem: 1, allowsNull: true) else { return nil }
            guard let count else { return .array(nil) }
            guard let elements = try readElements(&cursor, count: count, depth: depth) else { return nil }
            return .array(elements)
        case UInt8(ascii: ">"):
            guard let count = try readCount(&cursor, elementsPerItem: 1, allowsNull: false) else { return nil }
            guard let elements = try readElements(&cursor, count: count ?? 0, depth: depth) else { return nil }
            return .push(elements)
        case UInt8(ascii: "~"):
            guard let count = try readCount(&cursor, elementsPerItem: 1, allowsNull: false) else { return nil }
            guard let elements = try readElements(&cursor, count: count ?? 0, depth: depth) else { return nil }
            return .set(Set(elements))
        case UInt8(ascii: "%"):
            guard let count = try readCount(&cursor, elementsPerItem: 2, allowsNull: false) else { return nil }
            guard let flat = try readElements(&cursor, count: (count ?? 0) * 2, depth: depth) else { return nil }
            var map = [RESPValue: RESPValue](minimumCapacity: flat.count / 2)
            for index in stride(from: 0, to: flat.count, by: 2) { map[flat[index]] = flat[index + 1] }
            return .map(map)
        default:
            throw .unknownType(marker)
        }
    }

    private func nested(_ depth: Int) throws(RESPDecodingError) -> Int {
        guard depth < limits.maxDepth else { throw .nestedTooDeep(limit: limits.maxDepth) }
        return depth + 1
    }

    private func readElements(_ cursor: inout ByteBuffer, count: Int, depth: Int) throws(RESPDecodingError)
        -> [RESPValue]?
    {
        let inner = try nested(depth)
        var elements: [RESPValue] = []
        elements.reserveCapacity(count)  // safe: readCount saw at least three bytes per element
        for _ in 0..<count {
            guard let element = try readValue(&cursor, depth: inner) else { return nil }
            elements.append(element)
        }
        return elements
    }

    /// A count line; `.some(nil)` for RESP2's `-1`. Nil until the bytes for `count` minimal elements could be there.
    private func readCount(_ cursor: inout ByteBuffer, elementsPerItem: Int, allowsNull: Bool)
        throws(RESPDecodingError) -> Int??
    {
        guard let count = try readLength(&cursor, allowsNull: allowsNull) else { return nil }
        guard let count else { return .some(nil) }
        guard count <= limits.maxAggregateCount else {
            throw .aggregateTooLarge(count: count, limit: limits.maxAggregateCount)
        }
        guard cursor.readableBytes >= count * elementsPerItem * 3 else { return nil }
        return count
    }

    /// The payload of `$`, `!` or `=`; `.some(nil)` for RESP2's `$-1`.
    private func readBlob(_ cursor: inout ByteBuffer, allowsNull: Bool) throws(RESPDecodingError) -> ByteBuffer?? {
        guard let length = try readLength(&cursor, allowsNull: allowsNull) else { return nil }
        guard let length else { return .some(nil) }
        guard length <= limits.maxBulkLength else { throw .bulkTooLong(length: length, limit: limits.maxBulkLength) }
        guard cursor.readableBytes >= length + 2 else { return nil }
        let blob = cursor.readSlice(length: length)!
        guard cursor.readInteger(as: UInt16.self) == 0x0D0A else { throw .badTerminator }
        return blob
    }

    /// A length line: digits, or `-1` where RESP2 allows a null (`.some(nil)`).
    private func readLength(_ cursor: inout ByteBuffer, allowsNull: Bool) throws(RESPDecodingError) -> Int?? {
        guard let line = try readLine(&cursor) else { return nil }
        let text = String(buffer: line)
        if allowsNull, text == "-1" { return .some(nil) }
        guard text.utf8.count <= 18, !text.isEmpty,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let length = Int(text)
        else { throw .invalidLength(String(text.prefix(32))) }
        return length
    }

    /// The bytes up to the next `\r\n`, which is consumed; nil when it has not arrived.
    private func readLine(_ cursor: inout ByteBuffer) throws(RESPDecodingError) -> ByteBuffer? {
        let view = cursor.readableBytesView
        let window = view.prefix(limits.maxLineLength + 1)
        guard let carriageReturn = window.firstIndex(of: UInt8(ascii: "\r")) else {
            if view.count > limits.maxLineLength { throw .lineTooLong(limit: limits.maxLineLength) }
            return nil
        }
        let length = carriageReturn - view.startIndex
        guard cursor.readableBytes >= length + 2 else { return nil }
        let line = cursor.readSlice(length: length)!
        guard cursor.readInteger(as: UInt16.self) == 0x0D0A else { throw .badTerminator }
        return line
    }
}
