import Testing

@testable import TokenGateCore

@Suite struct StoredValueNoticesTests {
    @Test func aNoticeSignalledBeforeItsWaitEndsItAtOnceAndOthersKeysAreNotWoken() async {
        let notices = StoredValueNotices()
        let mine = notices.register("token:a")
        let other = notices.register("token:b")
        notices.notify("token:a")
        // Only the notice can end this wait well before its timeout. The margin is wide because a loaded 2-core run
        // of every suite has kept a task that was ready to run waiting for 125 seconds.
        let started = ContinuousClock.now
        await mine.wait(upTo: .seconds(600))
        #expect(ContinuousClock.now - started < .seconds(300))
        notices.unregister(mine)
        // Not signalled: only its timeout ends the wait.
        await other.wait(upTo: .milliseconds(50))
        notices.unregister(other)
        #expect(notices.waiterCount == 0)
    }

    @Test func aSignalWakesAWaiterAlreadyWaiting() async {
        let notices = StoredValueNotices()
        let notice = notices.register("token:a")
        async let woken: Void = notice.wait(upTo: .seconds(60))
        // The signal lands before or after the wait begins; either way it ends the wait long before its timeout.
        notices.notify("token:a")
        await woken
        notices.unregister(notice)
        #expect(notices.waiterCount == 0)
    }
}
