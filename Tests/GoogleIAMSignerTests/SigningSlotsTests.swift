import Synchronization
import Testing

@testable import GoogleIAMSigner

/// `maxConcurrentSigns`: at most that many IAM calls in flight; the rest wait their turn, each until its deadline.
@Suite struct SigningSlotsTests {
    /// How many tasks hold a slot now, and the most that ever did at once.
    final class Holders: Sendable {
        let count = Mutex((now: 0, most: 0))
    }

    @Test func neverMoreHoldersThanSlotsAndEveryoneGetsATurn() async {
        let slots = SigningSlots(limit: 3)
        let held = Holders()
        let granted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    guard await slots.acquire(before: .now + .seconds(60)) else { return false }
                    held.count.withLock {
                        $0.now += 1
                        $0.most = max($0.most, $0.now)
                    }
                    try? await Task.sleep(for: .milliseconds(5))
                    held.count.withLock { $0.now -= 1 }
                    slots.release()
                    return true
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(granted == 40)
        #expect(held.count.withLock { $0.most } == 3)
    }

    @Test func aWaiterWhoseDeadlinePassesGivesUpAndTheSlotGoesToTheNext() async {
        let slots = SigningSlots(limit: 1)
        #expect(await slots.acquire(before: .now + .seconds(60)))
        #expect(await slots.acquire(before: .now + .milliseconds(50)) == false)
        async let patient = slots.acquire(before: .now + .seconds(60))
        try? await Task.sleep(for: .milliseconds(20))
        slots.release()
        #expect(await patient)
        slots.release()
        #expect(await slots.acquire(before: .now))
    }
}
