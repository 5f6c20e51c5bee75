import Foundation

/// Random Fleet Engine IDs, legal and illegal, from the pools Tests/Browser/fleet_engine_ids.py draws from (the
/// sequences differ: so do the generators). A "character" is a Unicode scalar; every pooled scalar is a grapheme of
/// its own and NFC whatever its neighbours, so the lengths hold by any count. Left out though legal: `*` (the gateway
/// refuses it as an ID: a claim of `*` means every trip) and `\` (Fleet Engine's older documentation forbids it).
struct FleetEngineIDs {
    /// TOKENGATE_ID_SEED, default 47; the tests print it.
    static let seed: UInt64 = ProcessInfo.processInfo.environment["TOKENGATE_ID_SEED"].flatMap { UInt64($0) } ?? 47
    static let maxLength = 64
    static let forbidden: [Unicode.Scalar] = ["/", ":", "?", ",", "#"]

    private static let pools: [[Unicode.Scalar]] = [
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        " +%&=-_.~@!$'()[];<>\"{}|^`",
        "àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÉÑÖÜßøæœ",
        "αβγδεζηθλμπσωΩΣабвгдежзийклмнопрстуфхцчшщыэюяЖЯ中文字車旅程東京北京あいうえおかきくけこ가나다라마바사",
        "€£¥©®°±µ¶§★♥✓",
        "😀😁😂🤣😃😄😅😉😊😍🚕🚗🚚📦🛵\u{1D49C}\u{1D49E}\u{1D49F}\u{1D538}\u{1D539}",
    ].map { Array($0.unicodeScalars) }

    /// Legal IDs at the edges: text that looks percent-encoded, spaces at either end, `+`, `=` and `&`, 64 emoji.
    static let edges = [
        "100%", "%41", "%2F%3A%23", "a+b", "+", " ", " lead", "trail ", "a  b", "=&=", "a=b&c=d", "é",
        String(repeating: "😀", count: 64), String(repeating: "x", count: 64),
    ]
    /// Not NFC: a decomposed é and Å, the Ohm and Angstrom signs (NFC makes them Ω and Å), Hangul jamo (NFC: 가).
    static let notNFC = ["e\u{301}", "A\u{30A}", "\u{2126}", "\u{212B}", "\u{1100}\u{1161}"]

    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// `count` legal IDs: the edges, then random ones, a fifth of them exactly 64 characters.
    mutating func legal(count: Int) -> [String] {
        var ids = Array(Self.edges.prefix(count))
        while ids.count < count {
            ids.append(text(length: Int.random(in: 0..<5, using: &random) == 0 ? Self.maxLength : Int.random(in: 1...Self.maxLength, using: &random)))
        }
        return ids
    }

    /// Each forbidden character in a random legal ID (six times), six IDs of 65 characters, and each of `notNFC`.
    mutating func illegal() -> [String] {
        var ids: [String] = []
        for forbidden in Self.forbidden {
            for _ in 0..<6 { ids.append(inserting(String(forbidden), maxLength: Self.maxLength - 1)) }
        }
        for _ in 0..<6 { ids.append(text(length: Self.maxLength + 1)) }
        for decomposed in Self.notNFC { ids.append(inserting(decomposed, maxLength: Self.maxLength - 2)) }
        return ids
    }

    /// Fleet Engine's rule, checked on its own terms: 1 to 64 scalars, NFC, none of `/ : ? , #`.
    static func isLegal(_ id: String) -> Bool {
        let scalars = Array(id.unicodeScalars)
        return (1...maxLength).contains(scalars.count) && !scalars.contains(where: forbidden.contains)
            && Array(id.precomposedStringWithCanonicalMapping.unicodeScalars) == scalars
    }

    private mutating func text(length: Int) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length {
            let pool = Self.pools[Int.random(in: 0..<Self.pools.count, using: &random)]
            scalars.append(pool[Int.random(in: 0..<pool.count, using: &random)])
        }
        return String(scalars)
    }

    private mutating func inserting(_ part: String, maxLength: Int) -> String {
        let base = Array(text(length: Int.random(in: 0...maxLength, using: &random)).unicodeScalars)
        let at = Int.random(in: 0...base.count, using: &random)
        var scalars = String.UnicodeScalarView(base[..<at])
        scalars.append(contentsOf: part.unicodeScalars)
        scalars.append(contentsOf: base[at...])
        return String(scalars)
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a seeded generator, so a failing ID can be drawn again.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
