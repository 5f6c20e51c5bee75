/// Dates and times as `2026-11-22T15:04:05Z` (UTC only): written in audit lines, read in `config.yaml`.
enum RFC3339 {
    /// `2026-11-22T15:04:05Z` from epoch seconds.
    static func format(_ seconds: Int64) -> String {
        // Days since the epoch to a civil date (Howard Hinnant's algorithm): no Foundation formatter per line.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let (hour, minute, second) = (secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
        return "\(year)-\(two(month))-\(two(day))T\(two(hour)):\(two(minute)):\(two(second))Z"
    }

    /// Epoch seconds of `2027-01-15T10:23:00Z` or of a date alone (`2027-01-15`, its midnight UTC); nil for
    /// anything else, an offset other than `Z` included.
    static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10 || bytes.count == 20 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            guard range.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[$0]) }) else { return nil }
            return range.reduce(0) { $0 * 10 + Int64(bytes[$1] - UInt8(ascii: "0")) }
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), let year = number(0..<4), let month = number(5..<7),
            let day = number(8..<10), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        var seconds: Int64 = 0
        if bytes.count == 20 {
            guard bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "Z"),
                let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19), hour < 24, minute < 60, second < 60
            else { return nil }
            seconds = hour * 3600 + minute * 60 + second
        }
        // Days from the civil date (Howard Hinnant's algorithm, the inverse of `format`'s).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return (era * 146_097 + dayOfEra - 719_468) * 86_400 + seconds
    }

    /// Epoch milliseconds of a time with a fraction of a second and `Z`, as Cloud Logging writes a log entry's
    /// `timestamp` (`2026-12-07T10:23:00.123456789Z`, the fraction optional, its digits past the third dropped);
    /// nil for anything else.
    static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"),
            let seconds = parse(String(decoding: bytes[0..<19] + [UInt8(ascii: "Z")], as: UTF8.self))
        else { return nil }
        guard bytes.count > 20 else { return seconds * 1000 }
        let fraction = bytes[20..<(bytes.count - 1)]
        guard bytes[19] == UInt8(ascii: "."), !fraction.isEmpty, fraction.count <= 9,
            fraction.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        let milliseconds = (fraction.prefix(3) + Array(repeating: UInt8(ascii: "0"), count: max(0, 3 - fraction.count)))
            .reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
        return seconds * 1000 + milliseconds
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
