// Micro-benchmarks for the SharedState request path: one admit and its release.
//  - memory backend: the in-process store (what a single gateway, or the tests, pay);
//  - Redis backend: one round trip to a real server, only when SWITCHYARD_BENCH_REDIS=host:port
//    names one (e.g. `redis-server --port 6390 --save ''` in another shell).
// Run: build/release/micro_bench --benchmark_filter=SharedState
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdlib>
#include <optional>

#include "alloc_counter.h"
#include "state/memory_state.h"
#include "state/redis/redis_backend.h"

namespace switchyard {
namespace {

namespace asio = boost::asio;
using state::AdmitRequest;
using state::AdmitResult;

// Admits and releases once per iteration, driving the awaitable to completion on `io`.
void admitReleaseLoop(benchmark::State& state, state::SharedStateBackend& backend) {
  asio::io_context io;
  auto client = backend.makeClient(io.get_executor());
  const AdmitRequest request{"model", "replica-1", 64};
  int64_t degraded = 0;
  bench::AllocCounter allocations;
  for (auto _ : state) {
    std::optional<AdmitResult> result;
    asio::co_spawn(io, client->admit(request),
                   [&](std::exception_ptr, AdmitResult r) { result = r; });
    io.restart();
    while (!result) io.run_one();
    if (result->verdict == state::AdmitVerdict::kAdmitted) {
      client->release(request.model, request.replica);
    } else {
      ++degraded;
    }
    benchmark::DoNotOptimize(result);
  }
  allocations.report(state);
  state.counters["not_admitted"] = static_cast<double>(degraded);
}

void BM_SharedStateMemoryAdmitRelease(benchmark::State& state) {
  auto backend = state::makeMemoryBackend(std::make_shared<state::MemoryStore>(), "bench");
  admitReleaseLoop(state, *backend);
}
BENCHMARK(BM_SharedStateMemoryAdmitRelease);

void BM_SharedStateRedisAdmitRelease(benchmark::State& state) {
  const char* address = std::getenv("SWITCHYARD_BENCH_REDIS");
  if (address == nullptr || *address == '\0') {
    state.SkipWithError("set SWITCHYARD_BENCH_REDIS=host:port to run");
    return;
  }
  state::SharedStateSettings settings;
  settings.backend = state::SharedStateSettings::Backend::kRedis;
  settings.address = address;
  settings.call_timeout = 100 * kNsPerMs;
  settings.key_prefix = "sybench";
  auto backend = state::makeRedisBackend(settings, "bench");
  admitReleaseLoop(state, *backend);
}
BENCHMARK(BM_SharedStateRedisAdmitRelease)->UseRealTime();

}  // namespace
}  // namespace switchyard
