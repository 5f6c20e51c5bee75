import FuzzSupport
import TokenGateCore
import YAML

// Relative file references resolve under a folder that does not exist, so the parser's file reads fail the
// same way on every machine. `${FUZZ_VALUE}` and `${FUZZ_EMPTY}` are there for placeholders to resolve.
let file = ConfigFile(
    path: "/nonexistent-tokengate-fuzz/config.yaml",
    environment: ["FUZZ_VALUE": "fleet-engine-fuzz", "FUZZ_EMPTY": ""]
)

/// `config.yaml` end to end: YAML, then `ConfigurationParser` in both modes. Failing fast and collecting every
/// error must agree: fast succeeds exactly when collecting finds a configuration and no error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let root = try? ConfigNode.parse(fuzzInput(data, size), file: file) else { return 0 }
    let parser = ConfigurationParser()
    let fast = Result { try parser.parse(root) }
    let collected = parser.parseCollectingErrors(root)
    switch fast {
    case .success(let configuration):
        invariant(collected.errors.isEmpty, "parse succeeded but parseCollectingErrors found \(collected.errors)")
        invariant(
            collected.configuration.map { Set($0.providers.keys) } == Set(configuration.providers.keys),
            "the two modes disagree on the providers"
        )
    case .failure(let error):
        invariant(
            collected.configuration == nil || !collected.errors.isEmpty,
            "parse failed (\(error)) but parseCollectingErrors found a configuration and no error"
        )
    }
    return 0
}
