// Micro-benchmarks for the auth stage (gateway/auth_stage.h): ns/op and allocs/op of what a keyed
// request pays before routing — the bearer header, the keyed BLAKE2b digest and the table lookup
// with its constant-time compare (at 10, 1k and 100k keys), the model check, both per-minute
// budgets, and the per-address request-rate check — and the whole stage as the pipeline runs it
// on one gateway (authenticate, model, budgets, settle). Baseline: the same request with auth off.
// Run: build/release/micro_bench --benchmark_filter='Auth|Quota|ClientRate|KeyLookup'
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admission/client_limits.h"
#include "alloc_counter.h"
#include "auth/key_table.h"
#include "fleet/fleet_registry.h"
#include "gateway/auth_stage.h"
#include "gateway/security_plane.h"
#include "observe/observer.h"
#include "state/shared_state.h"

namespace switchyard {
namespace {

struct KeyedTable {
  auth::KeysFile file;
  std::unique_ptr<auth::KeyStates> states = std::make_unique<auth::KeyStates>();
  std::unique_ptr<auth::KeyTable> table;
  std::string probe;  // a key in the table
};

KeyedTable makeTable(size_t keys) {
  KeyedTable t;
  t.file.hash_key = auth::generateHashKey();
  for (size_t i = 0; i < keys; ++i) {
    const std::string key = auth::generateKey();
    auth::KeyRecord record;
    record.name = "k" + std::to_string(i);
    record.digest = auth::digestOf(t.file.hash_key, key);
    record.models = {"llama2-7b", "mistral-7b"};
    record.rpm = 1'000'000'000;
    record.tpm = 1'000'000'000;
    t.file.keys.push_back(record);
    if (i == keys / 2) t.probe = key;
  }
  t.table = std::make_unique<auth::KeyTable>(t.file, *t.states);
  return t;
}

void BM_KeyLookup(benchmark::State& state) {
  const KeyedTable t = makeTable(static_cast<size_t>(state.range(0)));
  const std::string header = "Bearer " + t.probe;
  bench::AllocCounter allocs;
  for (auto _ : state) {
    const std::string_view token = auth::bearerToken(header);
    const auth::KeyEntry* entry = t.table->find(token);
    benchmark::DoNotOptimize(entry);
    benchmark::DoNotOptimize(entry->mayUse("mistral-7b"));
  }
  allocs.report(state);
}
BENCHMARK(BM_KeyLookup)->Arg(10)->Arg(1000)->Arg(100000);

void BM_KeyLookupMiss(benchmark::State& state) {
  const KeyedTable t = makeTable(1000);
  const std::string header = "Bearer " + auth::generateKey();
  bench::AllocCounter allocs;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t.table->find(auth::bearerToken(header)));
  }
  allocs.report(state);
}
BENCHMARK(BM_KeyLookupMiss);

void BM_QuotaTakeBoth(benchmark::State& state) {
  auth::QuotaBucket requests, tokens;
  TimeNs now = 1'000 * kNsPerSec;
  bench::AllocCounter allocs;
  for (auto _ : state) {
    now += 1000;
    benchmark::DoNotOptimize(requests.take(now, 1'000'000'000, 1));
    benchmark::DoNotOptimize(tokens.take(now, 1'000'000'000, 300));
    tokens.settle(1'000'000'000, -50);
  }
  allocs.report(state);
}
BENCHMARK(BM_QuotaTakeBoth);

void BM_ClientRate(benchmark::State& state) {
  admission::ClientLimitSettings settings;
  settings.requests_per_second_per_ip = 1e9;
  admission::ClientLimits limits(settings);
  std::array<uint8_t, 16> address{};
  address[15] = 7;
  const int32_t slot = limits.openConnection(address, 1'000 * kNsPerSec);
  TimeNs now = 1'000 * kNsPerSec;
  bench::AllocCounter allocs;
  for (auto _ : state) benchmark::DoNotOptimize(limits.admitRequest(slot, now += 1000));
  allocs.report(state);
}
BENCHMARK(BM_ClientRate);

// The whole stage for one request, as the pipeline calls it on a single gateway (budgets in this
// gateway's atomics), with the real SecurityPlane, observer and memory shared state.
class StageFixture {
 public:
  explicit StageFixture(bool keyed) {
    const KeyedTable t = makeTable(1000);
    key_ = t.probe;
    dir_ = std::filesystem::temp_directory_path() / ("switchyard-auth-bench-" +
                                                     std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string path = (dir_ / "keys.yaml").string();
    auth::writeKeysFile(path, t.file);
    gateway::SecurityConfig config;
    if (keyed) config.keys_file = path;
    security_ = std::make_unique<gateway::SecurityPlane>(config, false);
    observability_ = std::make_unique<observe::Observability>(observe::ObserveConfig{}, 1);
    backend_ = state::makeBackend(state::SharedStateSettings{});
    client_ = backend_->makeClient(io_.get_executor());
    stage_ = std::make_unique<gateway::AuthStage>(*security_, observability_->worker(0),
                                                  *client_);
    fleet::ModelSpec spec;
    spec.name = "llama2-7b";
    spec.replicas.push_back({"127.0.0.1:1", {}});
    registry_.apply({spec}, kNsPerSec, "least-request", 1, 0);
    snapshot_ = registry_.latest();
  }
  ~StageFixture() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  // authenticate → model → budgets → settle; false if anything refused.
  bool run(TimeNs now) {
    stage_->begin(auth_);
    record_.input_tokens = 20;
    record_.output_tokens = 280;
    record_.completed_at = now;
    if (stage_->authenticate(header_, auth_, record_)) return false;
    if (!stage_->mayUse(auth_, "llama2-7b")) return false;
    std::optional<gateway::Refusal> refused;
    bool done = false;
    boost::asio::co_spawn(
        io_, stage_->beforeRouting(auth_, snapshot_->models[0], 300, false, now),
        [&](std::exception_ptr, std::optional<gateway::Refusal> r) {
          refused = std::move(r);
          done = true;
        });
    io_.restart();
    io_.run();
    stage_->settle(auth_, record_);
    return done && !refused;
  }
  void setHeader() { header_ = "Bearer " + key_; }

 private:
  std::filesystem::path dir_;
  std::string key_;
  std::string header_;
  boost::asio::io_context io_;
  std::unique_ptr<gateway::SecurityPlane> security_;
  std::unique_ptr<observe::Observability> observability_;
  std::shared_ptr<state::SharedStateBackend> backend_;
  std::unique_ptr<state::SharedStateClient> client_;
  std::unique_ptr<gateway::AuthStage> stage_;
  fleet::FleetRegistry registry_;
  std::shared_ptr<const fleet::FleetSnapshot> snapshot_;
  gateway::RequestAuth auth_;
  observe::RequestRecord record_;
};

void authStage(benchmark::State& state, bool keyed) {
  StageFixture fixture(keyed);
  fixture.setHeader();
  TimeNs now = 1'000 * kNsPerSec;
  if (!fixture.run(now)) {
    state.SkipWithError("the stage refused");
    return;
  }
  bench::AllocCounter allocs;
  for (auto _ : state) benchmark::DoNotOptimize(fixture.run(now += 1000));
  allocs.report(state);
}

void BM_AuthStageKeyed(benchmark::State& state) { authStage(state, true); }
void BM_AuthStageOff(benchmark::State& state) { authStage(state, false); }
BENCHMARK(BM_AuthStageKeyed);
BENCHMARK(BM_AuthStageOff);

}  // namespace
}  // namespace switchyard
