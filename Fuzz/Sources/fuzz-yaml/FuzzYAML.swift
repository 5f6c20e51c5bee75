import FuzzSupport
import YAML

/// The strict YAML reader over libyaml (every `config.yaml`, every token file): anything may be refused; what it
/// returns keeps the promises the config code relies on: marks are 1-based, mapping keys are unique, nesting
/// stays within `maxDepth`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzYAML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let parser = YAMLParser()
    do {
        guard let root = try parser.parse(fuzzInput(data, size)) else { return 0 }
        check(root, depth: 0, maxDepth: parser.maxDepth)
    } catch {
        if let mark = error.mark { checkMark(mark) }
    }
    return 0
}

private func check(_ node: YAMLNode, depth: Int, maxDepth: Int) {
    checkMark(node.mark)
    switch node.content {
    case .scalar:
        break
    case .sequence(let items):
        invariant(depth < maxDepth, "a document nests deeper than \(maxDepth)")
        for item in items { check(item, depth: depth + 1, maxDepth: maxDepth) }
    case .mapping(let entries):
        invariant(depth < maxDepth, "a document nests deeper than \(maxDepth)")
        invariant(Set(entries.map(\.key.value)).count == entries.count, "a mapping came back with a duplicate key")
        for entry in entries {
            checkMark(entry.keyMark)
            check(entry.value, depth: depth + 1, maxDepth: maxDepth)
        }
    }
}

private func checkMark(_ mark: Mark) {
    invariant(mark.line >= 1 && mark.column >= 1, "mark \(mark) is not 1-based")
}
