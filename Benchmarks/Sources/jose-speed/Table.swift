/// Prints rows as a fixed-width table: alg, op, TokenGate ops/s, openssl ops/s, ratio (TokenGate / openssl).
func printTable(_ rows: [Row], title: String) {
    print(title)
    let hasReference = rows.contains { $0.openSSL != nil }
    var header = pad("alg", 6) + pad("op", 20, right: false) + pad("tokengate ops/s", 16)
    if hasReference { header += pad("openssl ops/s", 15) + pad("ratio", 7) }
    print(header)
    print(String(repeating: "-", count: header.count))
    for row in rows {
        var line = pad(row.algorithm, 6) + pad(row.operation, 20, right: false) + pad(format(row.tokenGate, 1), 16)
        if hasReference {
            if let reference = row.openSSL {
                line += pad(format(reference, 1), 15) + pad(format(row.tokenGate / reference, 2), 7)
            } else {
                line += pad("-", 15) + pad("-", 7)
            }
        }
        print(line)
    }
}

private func pad(_ text: String, _ width: Int, right: Bool = true) -> String {
    let padding = String(repeating: " ", count: max(0, width - text.count))
    return right ? " " + padding + text : " " + text + padding
}

private func format(_ value: Double, _ decimals: Int) -> String {
    let scale = decimals == 1 ? 10.0 : 100.0
    let rounded = (value * scale).rounded() / scale
    let integral = Int(rounded)
    let fraction = Int(((rounded - Double(integral)) * scale).rounded())
    let digits = decimals == 1 ? String(fraction) : (fraction < 10 ? "0\(fraction)" : String(fraction))
    return "\(integral).\(digits)"
}
