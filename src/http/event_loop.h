// runEventLoop: io_context::run(), optionally with busy polling.
//
// A thread that runs out of handlers normally sleeps in epoll_wait until the kernel wakes it.
// On a virtual machine that wake-up (an inter-processor interrupt, the hypervisor scheduling the
// idle vCPU back in) costs tens to hundreds of microseconds, twice per proxied request at low
// concurrency: once for the engine's answer, once for the client's next request. With a spin
// window the thread keeps polling (epoll_wait with a zero timeout, through io_context::poll())
// for up to that long after its last handler before it sleeps, so an event that arrives within
// the window is handled at once. The price is the CPU spent polling: at most one window per
// burst of work on an idle thread, all of it when events keep arriving closer than the window
// (HAProxy's `busy-polling` makes the same trade). Reported through `spun` so it can be counted.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace switchyard::http {

// Runs `io` until it is stopped or runs out of work, like io.run(). `spin` <= 0: io.run() as
// is. `spun` (may be empty) receives the nanoseconds spent polling without finding work, in
// pieces of at least a millisecond or when the thread goes to sleep or returns.
void runEventLoop(boost::asio::io_context& io, std::chrono::nanoseconds spin,
                  const std::function<void(int64_t)>& spun = {});

}  // namespace switchyard::http
