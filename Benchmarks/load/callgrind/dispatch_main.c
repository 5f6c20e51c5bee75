// Preloaded into the gateway under valgrind by Benchmarks/load/instructions.sh, never linked into TokenGate.
//
// A Swift program with an async main starts it with libdispatch's dispatch_main(), which ends the main thread
// (pthread_exit) and parks it in sigsuspend; valgrind 3.19 crashes on the first thread created after that. This
// dispatch_main() keeps the main thread instead and drains the main queue itself, as Foundation's run loop does
// on Linux: it waits on the queue's wake-up descriptor and runs what was enqueued.
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

// libdispatch's hooks for a run loop that drains the main queue (resolved at load time from the program's own
// libdispatch).
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

void dispatch_main(void) {
    int handle = _dispatch_get_main_queue_handle_4CF();
    for (;;) {
        struct pollfd ready = {.fd = handle, .events = POLLIN};
        if (poll(&ready, 1, -1) > 0) {
            uint64_t count;
            (void)read(handle, &count, sizeof count);
        }
        _dispatch_main_queue_callback_4CF(0);
    }
}
