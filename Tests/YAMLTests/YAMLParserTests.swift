import Testing
import YAML

@Suite struct YAMLParserTests {
    private func parse(_ text: String) throws -> YAMLNode {
        try #require(try YAMLParser().parse(text))
    }

    @Test func nestedMapsAndSequencesCarryExactMarks() throws {
        let text = """
            server:
              listen:
                host: "0.0.0.0"
                port: 8080
            providers:
              - id: fleet
                scopes: [read, write]
            """
        let root = try parse(text)
        #expect(root.mark == Mark(line: 1, column: 1))
        let listen = try #require(root["server"]?["listen"])
        #expect(listen.mark == Mark(line: 3, column: 5))
        let port = try #require(listen["port"])
        #expect(port.mark == Mark(line: 4, column: 11))
        #expect(port.scalar == YAMLScalar(value: "8080", isPlain: true))
        let keyMarks = try #require(listen.mapping).map(\.keyMark)
        #expect(keyMarks == [Mark(line: 3, column: 5), Mark(line: 4, column: 5)])

        let providers = try #require(root["providers"]?.sequence)
        #expect(providers.count == 1)
        #expect(providers[0].mark == Mark(line: 6, column: 5))
        let scopes = try #require(providers[0]["scopes"])
        #expect(scopes.mark == Mark(line: 7, column: 13))
        let write = try #require(scopes.sequence?.last)
        #expect(write.mark == Mark(line: 7, column: 20))
        #expect(write.scalar?.value == "write")
    }

    @Test func mappingKeepsDocumentOrder() throws {
        let keys = try #require(try parse("b: 1\na: 2\nc: 3\n").mapping).map(\.key.value)
        #expect(keys == ["b", "a", "c"])
    }

    @Test(arguments: [
        ("port: 8080", YAMLScalar(value: "8080", isPlain: true)),
        ("port: \"8080\"", YAMLScalar(value: "8080", isPlain: false)),
        ("port: '8080'", YAMLScalar(value: "8080", isPlain: false)),
        ("port: !!str 8080", YAMLScalar(value: "8080", isPlain: true, tag: "tag:yaml.org,2002:str")),
        ("port: !custom x", YAMLScalar(value: "x", isPlain: true, tag: "!custom")),
        ("port:", YAMLScalar(value: "", isPlain: true)),
        ("port: \"a\\tb\"", YAMLScalar(value: "a\tb", isPlain: false)),
        ("\"<<\": 1", nil),
    ])
    func plainAndQuotedScalarsStayDistinct(_ text: String, _ expected: YAMLScalar?) throws {
        let root = try parse(text)
        if let expected {
            #expect(root["port"]?.scalar == expected)
        } else {
            #expect(root["<<"]?.scalar == YAMLScalar(value: "1", isPlain: true))
        }
    }

    @Test(arguments: [
        "name: gate\nlimits:\n  - 1\n  - 2\n",
        "{name: gate, limits: [1, 2]}",
        "name: gate\nlimits: [1, 2]\n",
        "---\nname: gate\nlimits:\n- 1\n- 2\n...\n",
    ])
    func blockAndFlowStylesBuildTheSameTree(_ text: String) throws {
        let root = try parse(text)
        #expect(root["name"]?.scalar?.value == "gate")
        #expect(root["limits"]?.sequence?.compactMap(\.scalar?.value) == ["1", "2"])
    }

    @Test func literalAndFoldedBlockScalars() throws {
        let root = try parse(
            """
            script: |
              line one
              line two
            folded: >
              a
              b
            stripped: |-
              x
            """
        )
        #expect(root["script"]?.scalar == YAMLScalar(value: "line one\nline two\n", isPlain: false))
        #expect(root["folded"]?.scalar == YAMLScalar(value: "a b\n", isPlain: false))
        #expect(root["stripped"]?.scalar == YAMLScalar(value: "x", isPlain: false))
        #expect(root["script"]?.mark == Mark(line: 1, column: 9))
    }

    @Test(arguments: ["", "\u{FEFF}", "# only a comment\n", "# one\n\n# two\n", "   \n\n"])
    func emptyOrCommentOnlyInputIsNil(_ text: String) throws {
        #expect(try YAMLParser().parse(text) == nil)
    }

    @Test func byteAndStringInputsAgree() throws {
        let node = try #require(try YAMLParser().parse(Array("\u{FEFF}k: é\n".utf8)))
        #expect(node["k"]?.scalar?.value == "é")
        #expect(node["k"]?.mark == Mark(line: 1, column: 4))
    }

    @Test func tenThousandEntryDocumentParses() throws {
        var text = ""
        for index in 0..<10_000 { text += "key\(index): \(index)\n" }
        let entries = try #require(try parse(text).mapping)
        #expect(entries.count == 10_000)
        #expect(entries.last?.key.value == "key9999")
        #expect(entries.last?.keyMark == Mark(line: 10_000, column: 1))
        #expect(entries.last?.value.scalar?.value == "9999")
    }

    @Test func depthAtTheLimitParses() throws {
        let text = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try YAMLParser().parse(text) != nil)
    }

    @Test func inputAtTheSizeLimitParses() throws {
        var parser = YAMLParser()
        parser.maxBytes = 8
        #expect(try parser.parse("a: 12345")?["a"]?.scalar?.value == "12345")
    }

    @Test func accessorsReturnNilForOtherKinds() throws {
        let root = try parse("a: [1]\n")
        #expect(root.scalar == nil)
        #expect(root.sequence == nil)
        #expect(root["missing"] == nil)
        #expect(root["a"]?.mapping == nil)
        #expect(root["a"]?["x"] == nil)
        #expect([root.kindName, root["a"]?.kindName, root["a"]?.sequence?.first?.kindName] == ["mapping", "sequence", "scalar"])
    }
}
