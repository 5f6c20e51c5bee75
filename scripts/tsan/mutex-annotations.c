// Preloaded (LD_PRELOAD) into the test processes by `scripts/sanitize thread`: tells ThreadSanitizer about the
// lock handoffs of Swift's `Synchronization.Mutex` that it cannot see on Linux.
//
// Why: `Mutex.withLock` inlines its fast path (an acquiring / releasing compare-exchange, which TSan sees), but
// under contention it calls `_MutexHandle._lockSlow` / `_unlockSlow` in libswiftSynchronization.so, which is not
// instrumented and hands the lock over inside the kernel (futex). TSan then sees two threads touch the protected
// value with no happens-before edge and reports a "Swift access race" on correctly locked state: eight threads
// appending to one `Mutex<[Int]>` are enough (see docs/development.md, "Sanitizers"). The reports name only the
// caller's frames, so a suppression would have to silence our own code; instead this adds the missing edges, as
// TSan's own pthread_mutex interceptors do: release before the slow unlock, acquire after the slow lock.
// Races outside a lock are still reported.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// Weak: the preload also reaches uninstrumented processes (swift test itself), where these are absent.
extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

// Swift methods take `self` in the swiftself register, which clang's swift_context parameter maps to.
#define SWIFT_METHOD __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFT_METHOD void (*LockSlow)(uint32_t, void *SWIFT_SELF);
typedef SWIFT_METHOD bool (*TryLockSlow)(void *SWIFT_SELF);
typedef SWIFT_METHOD void (*UnlockSlow)(void *SWIFT_SELF);

static void *next(const char *symbol) {
    void *function = dlsym(RTLD_NEXT, symbol);
    if (function == NULL) {
        fprintf(stderr, "mutex-annotations: %s not found: %s\n", symbol, dlerror());
        abort();
    }
    return function;
}

SWIFT_METHOD void lock_slow(uint32_t thread, void *SWIFT_SELF handle) __asm__(LOCK_SLOW);
SWIFT_METHOD void lock_slow(uint32_t thread, void *SWIFT_SELF handle) {
    static LockSlow real;
    if (real == NULL) real = (LockSlow)next(LOCK_SLOW);
    real(thread, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFT_METHOD bool try_lock_slow(void *SWIFT_SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFT_METHOD bool try_lock_slow(void *SWIFT_SELF handle) {
    static TryLockSlow real;
    if (real == NULL) real = (TryLockSlow)next(TRY_LOCK_SLOW);
    bool locked = real(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFT_METHOD void unlock_slow(void *SWIFT_SELF handle) __asm__(UNLOCK_SLOW);
SWIFT_METHOD void unlock_slow(void *SWIFT_SELF handle) {
    static UnlockSlow real;
    if (real == NULL) real = (UnlockSlow)next(UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    real(handle);
}
