import Testing
import YAML

@Suite struct YAMLRejectionTests {
    private static let deep65 = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
    private static let blockDeep65 = (0..<65).map { String(repeating: "  ", count: $0) + "k:" }.joined(separator: "\n") + " 1\n"

    @Test(arguments: [
        ("x: *ref\n", YAMLError.alias(Mark(line: 1, column: 4))),
        ("- a\n- *ref\n", .alias(Mark(line: 2, column: 3))),
        ("x: &ref 1\ny: *ref\n", .anchor(Mark(line: 1, column: 4))),
        ("base: &b {x: 1}\n", .anchor(Mark(line: 1, column: 7))),
        ("- &item [1]\n", .anchor(Mark(line: 1, column: 3))),
        ("&k key: 1\n", .anchor(Mark(line: 1, column: 1))),
        ("a: 1\n<<: {b: 2}\n", .mergeKey(Mark(line: 2, column: 1))),
        ("{<<: x}", .mergeKey(Mark(line: 1, column: 2))),
        ("host: a\nport: 1\nport: 2\n", .duplicateKey("port", Mark(line: 3, column: 1))),
        ("server:\n  port: 1\n  \"port\": 2\n", .duplicateKey("port", Mark(line: 3, column: 3))),
        ("{a: 1, a: 2}", .duplicateKey("a", Mark(line: 1, column: 8))),
        ("? [a]\n: 1\n", .nonScalarKey(Mark(line: 1, column: 3))),
        ("[a]: 1\n", .nonScalarKey(Mark(line: 1, column: 1))),
        ("{[a]: 1}", .nonScalarKey(Mark(line: 1, column: 2))),
        ("? {a: 1}\n: 2\n", .nonScalarKey(Mark(line: 1, column: 3))),
        ("? a: 1\n: 2\n", .nonScalarKey(Mark(line: 1, column: 3))),
        ("a: 1\n---\nb: 2\n", .multipleDocuments(Mark(line: 2, column: 1))),
        ("--- a\n...\n--- b\n", .multipleDocuments(Mark(line: 3, column: 1))),
        ("a: 1\n---\n", .multipleDocuments(Mark(line: 2, column: 1))),
        (deep65, .tooDeep(limit: 64, Mark(line: 1, column: 65))),
        (blockDeep65, .tooDeep(limit: 64, Mark(line: 65, column: 129))),
        (
            "a:\n\tb: 1\n",
            .syntax("found character that cannot start any token (while scanning for the next token)", Mark(line: 2, column: 1))
        ),
        ("a: b: c\n", .syntax("mapping values are not allowed in this context", Mark(line: 1, column: 5))),
        ("a\u{01}: 1\n", .syntax("control characters are not allowed", Mark(line: 1, column: 2))),
        ("é\u{01}", .syntax("control characters are not allowed", Mark(line: 1, column: 2))),
    ])
    func refusesWithExactErrorAndMark(_ text: String, _ expected: YAMLError) {
        #expect(throws: expected) { try YAMLParser().parse(text) }
    }

    @Test(arguments: ["a: [1, 2\n", "key: \"unterminated\n", "a: {b\n", "- a\nb: c\n", "'a' 'b'\n"])
    func syntaxErrorsCarryAMarkAndLibyamlsProblem(_ text: String) {
        do {
            _ = try YAMLParser().parse(text)
            Issue.record("parsed \(text.debugDescription)")
        } catch {
            guard case .syntax(let problem, let mark) = error else {
                Issue.record("expected a syntax error, got \(error)")
                return
            }
            #expect(!problem.isEmpty)
            #expect(mark.line >= 1 && mark.column >= 1)
            #expect(error.mark == mark)
            #expect(error.description.hasPrefix("\(mark): syntax: "))
        }
    }

    @Test(
        arguments: [
            [0x61, 0x3A, 0x20, 0xFF, 0x0A],  // stray byte
            [0x61, 0x3A, 0x20, 0xC3],  // truncated sequence
            [0x61, 0x3A, 0x20, 0xC0, 0xAF],  // overlong "/"
            [0xED, 0xA0, 0x80],  // UTF-16 surrogate
        ] as [[UInt8]]
    )
    func invalidUTF8IsRefused(_ bytes: [UInt8]) {
        #expect(throws: YAMLError.invalidUTF8) { try YAMLParser().parse(bytes) }
    }

    @Test func utf16InputIsNotDecodedBehindOurBack() {
        #expect(throws: YAMLError.invalidUTF8) { try YAMLParser().parse([0xFF, 0xFE, 0x61, 0x00]) }
    }

    @Test func oversizeInputIsRefusedBeforeParsing() {
        var parser = YAMLParser()
        parser.maxBytes = 8
        // Invalid too, but the size is checked first.
        #expect(throws: YAMLError.tooLarge(limit: 8)) { try parser.parse([UInt8](repeating: 0xFF, count: 9)) }
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: (1 << 20) + 1)
        #expect(throws: YAMLError.tooLarge(limit: 1 << 20)) { try YAMLParser().parse(big) }
    }

    @Test func depthLimitIsConfigurable() throws {
        var parser = YAMLParser()
        parser.maxDepth = 2
        #expect(try parser.parse("a: [1]") != nil)
        #expect(throws: YAMLError.tooDeep(limit: 2, Mark(line: 1, column: 5))) { try parser.parse("a: [[1]]") }
    }

    @Test func deepInputIsRefusedWithoutRecursion() {
        let text = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        var parser = YAMLParser()
        parser.maxBytes = text.utf8.count
        #expect(throws: YAMLError.tooDeep(limit: 64, Mark(line: 1, column: 65))) { try parser.parse(text) }
    }

    @Test(arguments: [
        (YAMLError.duplicateKey("port", Mark(line: 3, column: 5)), "3:5: duplicate key 'port'"),
        (.alias(Mark(line: 2, column: 8)), "2:8: aliases are not allowed"),
        (.anchor(Mark(line: 1, column: 4)), "1:4: anchors are not allowed"),
        (.mergeKey(Mark(line: 2, column: 1)), "2:1: merge keys ('<<') are not allowed"),
        (.nonScalarKey(Mark(line: 1, column: 3)), "1:3: mapping keys must be scalars"),
        (.multipleDocuments(Mark(line: 4, column: 1)), "4:1: only one document is allowed"),
        (.tooDeep(limit: 64, Mark(line: 1, column: 65)), "1:65: nesting deeper than 64 levels"),
        (
            .syntax("mapping values are not allowed in this context", Mark(line: 1, column: 5)),
            "1:5: syntax: mapping values are not allowed in this context"
        ),
        (.tooLarge(limit: 1024), "input larger than 1024 bytes"),
        (.invalidUTF8, "input is not valid UTF-8"),
    ])
    func descriptionPutsTheMarkFirst(_ error: YAMLError, _ expected: String) {
        #expect(error.description == expected)
        #expect((error.mark == nil) == (expected.first?.isNumber != true))
    }
}
