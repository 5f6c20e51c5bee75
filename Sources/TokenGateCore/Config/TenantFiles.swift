import Foundation
import YAML

/// `providers: { include: providers.d/*.yaml }`: tenants declared one per file, beside (or instead of) the ones
/// written inline. Each file is a mapping with exactly one key, the provider ID, whose value is that provider's
/// section as it would be written under `providers:`. Patterns are resolved against the configuration's
/// directory, matched with glob(3), and read in sorted order; a pattern that matches nothing is a warning (an empty
/// `providers.d/` is fine while tenants are being moved).
///
/// On reload, a tenant file that does not parse or build keeps that tenant on its last good version (see
/// ``GatewayAssembler``); the global sections stay all-or-nothing.
package enum TenantFiles {
    /// One included file as read.
    package struct File: Sendable {
        /// The path as matched (the pattern resolved against the configuration's directory), for messages.
        package var path: String
        /// Its bytes.
        package var bytes: [UInt8]
    }

    /// Whether the entry `key: node` of `providers:` is an include rather than a provider: the key `include` with a
    /// string or a list of strings (a provider's value is always a mapping).
    static func isInclude(_ key: String, _ node: ConfigNode) -> Bool {
        key == "include" && (node.yaml.scalar != nil || node.yaml.sequence != nil)
    }

    /// The files the include's patterns match, sorted and without repeats; a pattern matching none is a warning.
    static func paths(_ node: ConfigNode) throws -> [String] {
        let patterns = node.yaml.scalar != nil ? [try node.nonEmptyString()] : try node.stringList()
        var paths: [String] = []
        for pattern in patterns {
            let matched = glob(node.file.resolve(pattern))
            if matched.isEmpty { node.warn("no file matches \(pattern)") }
            for path in matched where !paths.contains(path) { paths.append(path) }
        }
        return paths
    }

    /// Reads the tenant file at `path`: its bytes and its one entry.
    static func read(_ path: String, like parent: ConfigFile) throws -> (file: File, key: String, node: ConfigNode) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError(file: path, mark: nil, keyPath: "", message: "cannot read the file")
        }
        let bytes = [UInt8](data)
        let root = try ConfigNode.parse(
            bytes, file: ConfigFile(path: path, environment: parent.environment, diagnostics: parent.diagnostics))
        let entries = try root.entries()
        guard entries.count == 1, let entry = entries.first else {
            throw root.error("a tenant file declares exactly one provider (its project ID, then its section); this one has \(entries.count)")
        }
        return (File(path: path, bytes: bytes), entry.key, entry.node)
    }

    /// Every file `root`'s `providers: { include: … }` matches now, read; nil when the document does not parse.
    /// What a file watch digests beside the configuration itself.
    package static func files(of root: ConfigNode) -> [File] {
        guard let providers = try? root.entries().first(where: { $0.key == "providers" })?.node,
            let entries = try? providers.entries()
        else { return [] }
        return entries.filter { isInclude($0.key, $0.node) }.flatMap { (try? paths($0.node)) ?? [] }.map { path in
            File(path: path, bytes: FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? [])
        }
    }

    private static func glob(_ pattern: String) -> [String] {
        var matches = glob_t()
        defer { globfree(&matches) }
        guard Glibc.glob(pattern, 0, nil, &matches) == 0 else { return [] }
        return (0..<Int(matches.gl_pathc)).compactMap { matches.gl_pathv[$0].map { String(cString: $0) } }.sorted()
    }
}
