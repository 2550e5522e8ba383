// Telemetry sharing at fleet scale: G gateways share the scraping of N replicas (each owns
// N/G by rendezvous hashing) and exchange what they read through one real Redis, as
// gateway/telemetry_share.cc does: every round (a quarter of the scrape interval) each gateway
// appends the records of the scrapes it made since its last round and reads the others'.
// Scrapes are synthetic: a replica is read once per `scrape period`, with the signals of a
// lightly loaded engine (a few running, KV usage moving), so every record carries numbers.
// Reports what Redis spends (INFO cpu: cores; INFO stats: bytes in + out per second) and the
// records the gateways received, against those sent × (G - 1) (every record reaches the others).
// Only when SWITCHYARD_BENCH_REDIS=host:port names a server of its own (keys under a prefix of
// their own, not flushed).
// Run: SWITCHYARD_BENCH_REDIS=127.0.0.1:6390 build/release/micro_bench \
//        --benchmark_filter=SignalShareAtScale
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>
#include <vector>

#include "scale_bench.h"
#include "fleet/signal_batch.h"
#include "state/redis/redis_backend.h"

namespace switchyard {
namespace {

struct ShareTotals {
  int64_t rounds = 0;
  int64_t failed = 0;
  int64_t sent = 0;
  int64_t received = 0;
  int64_t malformed = 0;
};

// One gateway's loop: every `round` it appends the records of its share of the replicas read
// since the last round, then parses what the others appended.
boost::asio::awaitable<void> shareLoop(boost::asio::io_context& io, state::SharedStateSync& sync,
                                       std::vector<std::string> names, TimeNs round,
                                       TimeNs scrape_period, const bool& stop,
                                       ShareTotals& totals) {
  boost::asio::steady_timer wait(io);
  std::string cursor, payload;
  // Replicas are read evenly over the scrape period: `per_round` of them each round.
  const size_t per_round =
      std::max<size_t>(1, names.size() * static_cast<size_t>(round) / scrape_period);
  size_t next = 0;
  uint64_t seed = names.size();
  while (!stop) {
    payload.clear();
    for (size_t i = 0; i < per_round && !names.empty(); ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      fleet::EngineSignals s;
      s.running = static_cast<double>((seed >> 40) % 8);
      s.waiting = 0;
      s.kv_usage = static_cast<double>((seed >> 20) % 1000) / 1000.0;
      s.kv_capacity_tokens = 28'000;
      fleet::appendSignalRecord(payload, names[next], true, s, 12);
      next = (next + 1) % names.size();
      ++totals.sent;
    }
    ++totals.rounds;
    std::optional<state::SignalExchange> answer =
        co_await sync.exchangeSignals(payload, cursor, 2 * kNsPerSec);
    if (!answer) {
      ++totals.failed;
    } else {
      cursor = std::move(answer->cursor);
      for (const state::SignalBatch& batch : answer->batches) {
        totals.malformed += fleet::forEachSignalRecord(
            batch.payload, [&](const fleet::SignalRecord&) { ++totals.received; });
      }
    }
    wait.expires_after(std::chrono::nanoseconds(round));
    co_await wait.async_wait(boost::asio::use_awaitable);
  }
}

void BM_SignalShareAtScale(benchmark::State& state) {
  const std::optional<bench::RedisTarget> target = bench::benchRedisOrSkip(state);
  if (!target) return;
  const int replicas = static_cast<int>(state.range(0));
  const int gateways = static_cast<int>(state.range(1));
  const TimeNs scrape_period = state.range(2) * kNsPerMs;
  const TimeNs round = 25 * kNsPerMs;  // a quarter of the default 100 ms scrape interval
  for (auto _ : state) {
    boost::asio::io_context io(1);
    state::SharedStateSettings settings;
    settings.backend = state::SharedStateSettings::Backend::kRedis;
    settings.address = target->address;
    settings.key_prefix = "sybench" + std::to_string(std::rand());
    settings.sync_timeout = 2 * kNsPerSec;
    std::vector<std::shared_ptr<state::SharedStateBackend>> backends;
    std::vector<std::unique_ptr<state::SharedStateSync>> syncs;
    std::vector<ShareTotals> totals(gateways);
    bool stop = false;
    for (int g = 0; g < gateways; ++g) {
      backends.push_back(state::makeRedisBackend(settings, "gw-" + std::to_string(g)));
      syncs.push_back(backends.back()->makeSync(io.get_executor()));
      std::vector<std::string> share;  // replica names as a Kubernetes fleet spells them
      for (int i = g; i < replicas; i += gateways) {
        share.push_back("llama2-7b-a100-5d8f7c9b6-" + std::to_string(100000 + i));
      }
      boost::asio::co_spawn(io,
                            shareLoop(io, *syncs.back(), std::move(share), round, scrape_period,
                                      stop, totals[g]),
                            boost::asio::detached);
    }
    auto runFor = [&](std::chrono::milliseconds d) { bench::runFor(io, d); };
    runFor(std::chrono::milliseconds(2000));  // warm-up: heartbeats, cursors, scripts loaded
    ShareTotals before;
    for (const ShareTotals& t : totals) {
      before.sent += t.sent;
      before.received += t.received;
    }
    const bench::RedisCost cost0 = bench::redisCost(*target);
    const double self0 = bench::processCpuSeconds();
    const auto started = std::chrono::steady_clock::now();
    runFor(std::chrono::milliseconds(10000));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bench::RedisCost cost1 = bench::redisCost(*target);
    const double self1 = bench::processCpuSeconds();
    ShareTotals sum;
    for (const ShareTotals& t : totals) {
      sum.rounds += t.rounds;
      sum.failed += t.failed;
      sum.sent += t.sent;
      sum.received += t.received;
      sum.malformed += t.malformed;
    }
    state.counters["redis_cpu_pct"] = 100.0 * (cost1.cpu_seconds - cost0.cpu_seconds) / seconds;
    state.counters["redis_bytes_per_s"] = (cost1.bytes - cost0.bytes) / seconds;
    state.counters["share_cpu_pct_per_gateway"] = 100.0 * (self1 - self0) / seconds / gateways;
    state.counters["records_sent_per_s"] = static_cast<double>(sum.sent - before.sent) / seconds;
    // 1.0 when every record reached every other gateway.
    state.counters["delivered"] =
        gateways < 2 ? 1.0
                     : static_cast<double>(sum.received - before.received) /
                           static_cast<double>((sum.sent - before.sent) * (gateways - 1));
    state.counters["failed_rounds"] = static_cast<double>(sum.failed);
    state.counters["rounds"] = static_cast<double>(sum.rounds);
    state.counters["malformed"] = static_cast<double>(sum.malformed);
    stop = true;
    runFor(std::chrono::milliseconds(500));  // rounds in flight finish
    syncs.clear();
  }
}
// Replicas, gateways, scrape period (ms): 100 is the default interval, 200 the adaptive
// period of a stable replica.
BENCHMARK(BM_SignalShareAtScale)
    ->ArgNames({"replicas", "gateways", "period_ms"})
    ->Args({1024, 3, 100})
    ->Args({10000, 5, 100})
    ->Args({10000, 5, 200})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace switchyard
