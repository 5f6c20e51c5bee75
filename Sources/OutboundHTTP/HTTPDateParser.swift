/// HTTP-dates as RFC 9110 §5.6.7 makes recipients accept them, read to epoch seconds: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). Day names are checked as names, not against the date. Used by ``RetryAfter``.
enum HTTPDateParser {
    static let dayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    static let longDayNames = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The date's epoch seconds, or `nil` when `bytes` is none of the three forms.
    static func epochSeconds(_ bytes: ArraySlice<UInt8>) -> Int64? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.count == bytes.count, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        if let comma = text.firstIndex(of: ",") {
            let day = String(text[..<comma])
            let rest = text[text.index(after: comma)...]
            if dayNames.contains(day) { return imfFixdate(rest) }
            if longDayNames.contains(day) { return rfc850(rest) }
            return nil
        }
        return asctime(text)
    }

    /// ` 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ text: Substring) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0].isEmpty, parts[5] == "GMT", parts[1].count == 2, parts[3].count == 4,
            let day = number(parts[1]), let month = month(parts[2]), let year = number(parts[3])
        else { return nil }
        return epochSeconds(year: year, month: month, day: day, time: parts[4])
    }

    /// ` 06-Nov-94 08:49:37 GMT`; the two-digit year is 1970 to 2069.
    private static func rfc850(_ text: Substring) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].isEmpty, parts[3] == "GMT" else { return nil }
        let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard date.count == 3, date[0].count == 2, date[2].count == 2, let day = number(date[0]), let month = month(date[1]),
            let shortYear = number(date[2])
        else { return nil }
        return epochSeconds(year: shortYear < 70 ? 2000 + shortYear : 1900 + shortYear, month: month, day: day, time: parts[2])
    }

    /// `Sun Nov  6 08:49:37 1994` (a one-digit day is padded with a space).
    private static func asctime(_ text: String) -> Int64? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 5, dayNames.contains(String(parts[0])), (1...2).contains(parts[2].count), parts[4].count == 4,
            text.count == 24, let month = month(parts[1]), let day = number(parts[2]), let year = number(parts[4])
        else { return nil }
        return epochSeconds(year: year, month: month, day: day, time: parts[3])
    }

    /// `hh:mm:ss` on that day, UTC.
    private static func epochSeconds(year: Int64, month: Int64, day: Int64, time: Substring) -> Int64? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = number(clock[0]), let minute = number(clock[1]),
            let second = number(clock[2]), hour < 24, minute < 60, second <= 60, day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    private static func number(_ digits: Substring) -> Int64? {
        guard !digits.isEmpty, digits.utf8.allSatisfy(RetryAfter.isDigit) else { return nil }
        return digits.utf8.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
    }

    private static func month(_ name: Substring) -> Int64? {
        monthNames.firstIndex(of: String(name)).map { Int64($0 + 1) }
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
