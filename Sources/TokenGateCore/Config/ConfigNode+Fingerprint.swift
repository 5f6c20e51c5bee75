import Foundation
import JOSE
import OpenSSLPrimitives
import YAML

extension ConfigNode {
    /// A canonical text of this subtree for telling on reload whether a part of the configuration changed: every
    /// scalar with `${NAME}` resolved, and for a scalar that names an existing file (relative to the configuration),
    /// that file's SHA-256 — so a rotated key file or a changed secret counts as a change, a re-indented file not.
    func fingerprintText() -> String {
        var text = ""
        appendFingerprint(to: &text)
        return text
    }

    private func appendFingerprint(to text: inout String) {
        switch yaml.content {
        case .mapping:
            text += "{"
            for (key, child) in (try? entries()) ?? [] {
                text += "\(key.utf8.count):\(key)="
                child.appendFingerprint(to: &text)
                text += ";"
            }
            text += "}"
        case .sequence:
            text += "["
            for child in (try? sequence()) ?? [] {
                child.appendFingerprint(to: &text)
                text += ","
            }
            text += "]"
        case .scalar(let scalar):
            // An unset variable reads as the raw text: building failed on it already if it mattered.
            let value = (try? string()) ?? scalar.value
            text += "\(value.utf8.count):\(value)"
            let path = file.resolve(value)
            var isDirectory: ObjCBool = false
            if !value.isEmpty, value.utf8.count < 4096, FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
                !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path),
                let digest = try? Digest.sha256([UInt8](data))
            {
                text += "#" + HexBytes.encode(digest)
            }
        }
    }
}
