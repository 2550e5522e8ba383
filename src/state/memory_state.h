// The memory backend: one gateway's SharedStateClient/SharedStateSync over a MemoryStore.
//
// Several backends made from one store behave like several gateways sharing one Redis, which is
// how the contract tests (tests/redis/) hold both backends to the same expectations. In a single
// gateway the store is private and `distributed()` is false: the gateway's own atomics already
// decide admission, so it need not call the client on the request path at all.
//
// Calls complete before they return (the awaitables never suspend). Time comes from the
// injected Clock, so tests drive heartbeats and TTLs with a ManualClock.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "state/memory_store.h"
#include "state/shared_state.h"

namespace switchyard::state {

// One gateway on `store`. `clock` must outlive the backend and every client and sync it makes.
std::shared_ptr<SharedStateBackend> makeMemoryBackend(
    std::shared_ptr<MemoryStore> store, std::string gateway_id,
    const Clock& clock = SteadyClock::instance());

}  // namespace switchyard::state
