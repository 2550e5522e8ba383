// The shared-state sync at fleet scale: G gateways' GatewayStateSync against one real Redis,
// each with the same fleet of N replicas, run on one io_context for a fixed window while a
// light load moves the counters of a few replicas per cycle (`changing` replicas per gateway
// per 200 ms cycle: what completed requests do). Reports what Redis spends (INFO cpu: cores;
// INFO stats: bytes in + out per second) and the syncs' own CPU per gateway per second.
// Mode 0 is GatewayStateSync (deltas); mode 1 is the whole-table sync every gateway ran before
// deltas (publish every replica, read every replica, every cycle), driven through the same
// SharedStateSync calls, as the baseline of the same run.
// Only when SWITCHYARD_BENCH_REDIS=host:port names a server of its own (it is not flushed, but
// keys go under a prefix of their own).
// Run: SWITCHYARD_BENCH_REDIS=127.0.0.1:6390 build/release/micro_bench \
//        --benchmark_filter=SyncAtScale
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>
#include <vector>

#include "scale_bench.h"
#include "fleet/fleet_registry.h"
#include "gateway/shared_state_sync.h"
#include "state/redis/redis_backend.h"

namespace switchyard {
namespace {

void BM_SyncAtScale(benchmark::State& state) {
  const std::optional<bench::RedisTarget> target = bench::benchRedisOrSkip(state);
  if (!target) return;
  const int replicas = static_cast<int>(state.range(0));
  const int gateways = static_cast<int>(state.range(1));
  const int changing = static_cast<int>(state.range(2));
  const bool whole_table = state.range(3) != 0;
  std::vector<fleet::ModelSpec> models(1);
  models[0].name = "llama2-7b";
  for (int i = 0; i < replicas; ++i) {
    models[0].replicas.push_back(
        {"10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) + "." +
             std::to_string(i % 256) + ":8000",
         {{"gpu", "A100"}}});
  }
  for (auto _ : state) {
    boost::asio::io_context io(1);
    gateway::SharedStateConfig config;
    config.settings.backend = state::SharedStateSettings::Backend::kRedis;
    config.settings.address = target->address;
    config.settings.key_prefix = "sybench" + std::to_string(std::rand());
    config.settings.sync_timeout = 2 * kNsPerSec;
    std::vector<std::unique_ptr<fleet::FleetRegistry>> registries;
    std::vector<std::shared_ptr<state::SharedStateBackend>> backends;
    std::vector<std::unique_ptr<gateway::GatewayStateSync>> syncs;
    for (int g = 0; g < gateways; ++g) {
      registries.push_back(std::make_unique<fleet::FleetRegistry>());
      registries.back()->apply(models, 300 * kNsPerMs, "least-request");
      backends.push_back(state::makeRedisBackend(config.settings, "gw-" + std::to_string(g)));
      if (!whole_table) {
        syncs.push_back(std::make_unique<gateway::GatewayStateSync>(io, *backends.back(),
                                                                    *registries.back(), config));
        syncs.back()->start();
      }
    }
    bool stop_tables = false;
    std::vector<std::unique_ptr<state::SharedStateSync>> table_syncs;
    if (whole_table) {
      for (int g = 0; g < gateways; ++g) {
        table_syncs.push_back(backends[g]->makeSync(io.get_executor()));
        boost::asio::co_spawn(
            io,
            [&, g]() -> boost::asio::awaitable<void> {
              state::SharedStateSync& sync = *table_syncs[g];
              boost::asio::steady_timer wait(io);
              while (!stop_tables) {
                std::vector<state::ReplicaReport> reports;
                for (const auto& replica : registries[g]->replicas()) {
                  state::ReplicaReport r;
                  r.model = "llama2-7b";
                  r.replica = replica->name();
                  r.output_tokens = replica->counters().output_tokens_total.load();
                  r.timed_tokens = replica->counters().timed_tokens_total.load();
                  r.token_time_ns = replica->counters().token_time_ns_total.load();
                  reports.push_back(std::move(r));
                }
                if (co_await sync.publish(reports, config.liveness_ttl)) {
                  co_await sync.read(reports);
                }
                wait.expires_after(std::chrono::nanoseconds(config.sync_interval));
                co_await wait.async_wait(boost::asio::use_awaitable);
              }
            },
            boost::asio::detached);
      }
    }
    // Warm up: the first cycles publish and read everything.
    auto runFor = [&](std::chrono::milliseconds d) { bench::runFor(io, d); };
    runFor(std::chrono::milliseconds(3000));
    const bench::RedisCost cost0 = bench::redisCost(*target);
    const double self0 = bench::processCpuSeconds();
    const auto started = std::chrono::steady_clock::now();
    uint64_t seed = 1;
    for (int round = 0; round < 50; ++round) {  // 50 x 200 ms = 10 s
      for (int g = 0; g < gateways; ++g) {
        const auto replicas_now = registries[g]->replicas();
        for (int c = 0; c < changing; ++c) {
          seed = seed * 6364136223846793005ull + 1442695040888963407ull;
          auto& counters = replicas_now[(seed >> 33) % replicas_now.size()]->counters();
          counters.output_tokens_total.fetch_add(100);
          counters.timed_tokens_total.fetch_add(100);
          counters.token_time_ns_total.fetch_add(2'000'000);
        }
      }
      runFor(std::chrono::milliseconds(200));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bench::RedisCost cost1 = bench::redisCost(*target);
    const double self1 = bench::processCpuSeconds();
    stop_tables = true;
    int64_t failures = 0, published = 0, read = 0, syncs_total = 0;
    for (auto& sync : syncs) {
      failures += sync->syncFailuresTotal();
      published += sync->reportsPublishedTotal();
      read += sync->viewsReadTotal();
      syncs_total += sync->syncsTotal();
      sync->stop();
    }
    state.counters["redis_cpu_pct"] = 100.0 * (cost1.cpu_seconds - cost0.cpu_seconds) / seconds;
    state.counters["redis_bytes_per_s"] = (cost1.bytes - cost0.bytes) / seconds;
    state.counters["sync_cpu_pct_per_gateway"] = 100.0 * (self1 - self0) / seconds / gateways;
    state.counters["failed_cycles"] = static_cast<double>(failures);
    state.counters["cycles"] = static_cast<double>(syncs_total);
    state.counters["reports_published"] = static_cast<double>(published);
    state.counters["views_read"] = static_cast<double>(read);
    // Cycles in flight finish before their syncs go; the whole-table loops see stop_tables.
    runFor(std::chrono::milliseconds(1000));
    syncs.clear();
    table_syncs.clear();
  }
}
BENCHMARK(BM_SyncAtScale)
    ->ArgNames({"replicas", "gateways", "changing", "whole_table"})
    ->Args({10000, 5, 0, 0})
    ->Args({10000, 5, 20, 0})
    ->Args({1000, 5, 0, 1})
    ->Args({1000, 5, 20, 1})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace switchyard
