import OutboundHTTP
import Testing

/// The one `Retry-After` reader (RFC 9110 §10.2.3): delay-seconds, an HTTP-date in the three forms RFC 9110 §5.6.7
/// makes recipients accept, measured from a fixed `now`; past dates, garbage and the cap.
@Suite struct RetryAfterTests {
    /// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110's example date.
    static let now: Int64 = 784_111_777

    static func seconds(_ value: String?) -> Int? { RetryAfter.seconds(value, now: now) }

    @Test(arguments: [("120", 120), ("0", 0), ("007", 7), (" 5", 5), ("5 ", 5), ("\t30\t", 30), ("86400", 86_400)])
    func delaySecondsAreThatManySeconds(value: String, expected: Int) {
        #expect(Self.seconds(value) == expected)
    }

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:50:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:50:37 GMT",  // obsolete RFC 850
        "Sun Nov  6 08:50:37 1994",  // asctime, a one-digit day padded with a space
        "  Sun, 06 Nov 1994 08:50:37 GMT\t",  // surrounding whitespace
    ])
    func anHTTPDateInEachFormIsTheSecondsUntilThen(value: String) {
        #expect(Self.seconds(value) == 60)
    }

    @Test func asctimeTakesATwoDigitDay() {
        // 1994-11-16 08:49:37 is ten days after `now`: past the cap of a day.
        #expect(Self.seconds("Wed Nov 16 08:49:37 1994") == RetryAfter.maximumSeconds)
        #expect(RetryAfter.seconds("Wed Nov 16 08:49:37 1994", now: Self.now + 10 * 86_400 - 90) == 90)
    }

    @Test func rfc850TwoDigitYearsAre1970To2069() {
        // 2069-11-06 08:49:37 and 1970-11-06 08:49:37 UTC.
        #expect(RetryAfter.seconds("Wednesday, 06-Nov-69 08:49:37 GMT", now: 3_150_953_377 - 10) == 10)
        #expect(RetryAfter.seconds("Friday, 06-Nov-70 08:49:37 GMT", now: 26_729_377 - 10) == 10)
    }

    @Test func leapDaysAreDates() {
        #expect(RetryAfter.seconds("Thu, 29 Feb 1996 00:00:00 GMT", now: 825_552_000 - 1) == 1)
        #expect(RetryAfter.seconds("Tue, 29 Feb 2000 00:00:00 GMT", now: 951_782_400 - 1) == 1)
        #expect(RetryAfter.seconds("Wed, 29 Feb 1995 00:00:00 GMT", now: 0) == nil)
        #expect(RetryAfter.seconds("Thu, 29 Feb 2100 00:00:00 GMT", now: 0) == nil)
    }

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // now
        "Sun, 06 Nov 1994 08:49:36 GMT",  // a second ago
        "Sunday, 06-Nov-94 08:00:00 GMT",
        "Thu Jan  1 00:00:00 1970",
    ])
    func aDateNowOrPastIsZero(value: String) {
        #expect(Self.seconds(value) == 0)
    }

    @Test(arguments: [
        "", "   ", "-5", "+5", "1.5", "5s", "1e3", "0x10", "５", "soon",
        "Sun, 06 Nov 1994 08:49:37 UTC",  // not GMT
        "Sun, 6 Nov 1994 08:49:37 GMT",  // IMF-fixdate's day has two digits
        "Sun,  06 Nov 1994 08:49:37 GMT",  // two spaces
        "Sun, 06 nov 1994 08:49:37 GMT",  // month names are case-sensitive
        "Sun, 32 Nov 1994 08:49:37 GMT",  // no such day
        "Sun, 31 Nov 1994 08:49:37 GMT",  // November has 30
        "Sun, 06 Nov 1994 24:00:00 GMT",  // no such hour
        "Sun, 06 Nov 1994 08:60:00 GMT",  // no such minute
        "Sun, 06 Nov 94 08:49:37 GMT",  // a two-digit year outside RFC 850
        "Funday, 06-Nov-94 08:49:37 GMT",  // no such day name
        "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 spells the day out
        "Sun Nov 6 08:49:37 1994",  // asctime pads a one-digit day
        "1994-11-06T08:49:37Z",  // RFC 3339 is not an HTTP-date
        "Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT",
    ])
    func garbageIsNoHint(value: String) {
        #expect(Self.seconds(value) == nil)
    }

    @Test func noHeaderIsNoHint() {
        #expect(Self.seconds(nil) == nil)
    }

    @Test(arguments: ["86401", "999999999", "99999999999999999999999999999999", "000000000000000000000086401"])
    func longDelaysAreCappedAtADay(value: String) {
        #expect(Self.seconds(value) == RetryAfter.maximumSeconds)
        #expect(RetryAfter.maximumSeconds == 86_400)
    }

    @Test func farDatesAreCappedAtADay() {
        #expect(Self.seconds("Mon, 07 Nov 1994 08:49:38 GMT") == RetryAfter.maximumSeconds)
        #expect(Self.seconds("Mon, 07 Nov 1994 08:49:37 GMT") == RetryAfter.maximumSeconds)
        #expect(Self.seconds("Mon, 07 Nov 1994 08:49:36 GMT") == RetryAfter.maximumSeconds - 1)
        #expect(Self.seconds("Fri, 31 Dec 9999 23:59:59 GMT") == RetryAfter.maximumSeconds)
    }

    @Test func theWallClockIsTodaysEpochSeconds() {
        // 2026-01-01 < now < 2100-01-01: the default `now` is the wall clock in seconds, not milliseconds.
        #expect((1_767_225_600..<4_102_444_800).contains(RetryAfter.wallSeconds()))
    }
}

/// The waits ``RetryPolicy`` gives: exponential, capped by the ceiling, jittered down by at most half, and never
/// shorter than `Retry-After`.
@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 5, initialBackoff: .milliseconds(100), maxBackoff: .seconds(1))

    @Test func theWaitDoublesUpToTheCeiling() {
        let waits = (1...6).map { policy.delay(beforeRetry: $0, jitter: 1, retryAfter: nil) }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(policy.delay(beforeRetry: 1_000, jitter: 1, retryAfter: nil) == .seconds(1))
    }

    @Test func jitterTakesOffAtMostHalf() {
        #expect(policy.delay(beforeRetry: 2, jitter: 0, retryAfter: nil) == .milliseconds(100))
        #expect(policy.delay(beforeRetry: 2, jitter: 0.5, retryAfter: nil) == .milliseconds(150))
        // Out-of-range jitter is clamped.
        #expect(policy.delay(beforeRetry: 2, jitter: -3, retryAfter: nil) == .milliseconds(100))
        #expect(policy.delay(beforeRetry: 2, jitter: 7, retryAfter: nil) == .milliseconds(200))
    }

    @Test func retryAfterIsTheShortestWait() {
        #expect(policy.delay(beforeRetry: 1, jitter: 1, retryAfter: .seconds(3)) == .seconds(3))
        #expect(policy.delay(beforeRetry: 3, jitter: 1, retryAfter: .milliseconds(10)) == .milliseconds(400))
        #expect(policy.delay(beforeRetry: 1, jitter: 1, retryAfter: .zero) == .milliseconds(100))
    }

    @Test func theNamedPolicies() {
        #expect(RetryPolicy.once.maxAttempts == 1)
        #expect(RetryPolicy.untilDeadline.maxAttempts == .max)
        #expect(RetryPolicy.untilDeadline.delay(beforeRetry: 100, jitter: 1, retryAfter: nil) == .seconds(2))
    }
}
