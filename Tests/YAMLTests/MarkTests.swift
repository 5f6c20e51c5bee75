import Testing
import YAML

@Suite struct MarkTests {
    @Test func printsAsLineColonColumn() {
        #expect(Mark(line: 14, column: 7).description == "14:7")
    }
}
