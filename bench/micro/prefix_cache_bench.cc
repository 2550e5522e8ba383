// Prefix-cache routing's hot path per KiB of prompt: hashing the prompt into its block chain
// (XXH3, 16-token blocks of 64 bytes), looking the chain up on 8 replicas' indexes (one holding
// it whole, the others a quarter), and inserting it for the chosen one. ns/op, bytes/s and
// allocs/op (target 0 once warm). Then the prefix-cache decision itself for an unknown prefix,
// with and without its home. Last, what sharing routed chains between a gateway's workers costs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "alloc_counter.h"
#include "core/rng.h"
#include "fleet/fleet_registry.h"
#include "fleet/kv_index/chain_exchange.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/prefix_index.h"
#include "fleet/kv_index/prompt_blocks.h"
#include "gateway/prefix_stage.h"
#include "routing/prefix_probe.h"
#include "routing/router.h"

namespace switchyard {
namespace {

std::string promptOf(size_t bytes) {
  std::string s(bytes, ' ');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>('a' + (i * 131 + i / 7) % 26);
  return s;
}

void BM_PrefixHash(benchmark::State& state) {
  const std::string prompt = promptOf(static_cast<size_t>(state.range(0)) * 1024);
  fleet::kv_index::PromptBlockHasher hasher(16);
  bench::AllocCounter allocs;
  for (auto _ : state) {
    hasher.reset();
    hasher.text(prompt);
    benchmark::DoNotOptimize(hasher.blocks().data());
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * prompt.size()));
}
BENCHMARK(BM_PrefixHash)->Arg(1)->Arg(4)->Arg(16)->Arg(64);

void BM_PrefixHashLookupInsert8(benchmark::State& state) {
  const std::string prompt = promptOf(static_cast<size_t>(state.range(0)) * 1024);
  fleet::kv_index::PromptBlockHasher hasher(16);
  fleet::kv_index::PrefixIndex index;
  int replicas[8] = {};
  hasher.text(prompt);
  const std::vector<uint64_t> chain(hasher.blocks().begin(), hasher.blocks().end());
  for (int r = 0; r < 8; ++r) {
    const size_t held = r == 0 ? chain.size() : chain.size() / 4;
    index.insert(&replicas[r], std::span(chain).first(held), 8192);
  }
  bench::AllocCounter allocs;
  for (auto _ : state) {
    hasher.reset();
    hasher.text(prompt);
    uint32_t best = 0;
    for (int r = 0; r < 8; ++r) best = std::max(best, index.match(&replicas[r], hasher.blocks()));
    index.insert(&replicas[0], hasher.blocks(), 8192);
    benchmark::DoNotOptimize(best);
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * prompt.size()));
}
BENCHMARK(BM_PrefixHashLookupInsert8)->Arg(1)->Arg(4)->Arg(16)->Arg(64);

// Precise mode's lookup per request: the worker's snapshot check (one atomic load of the hub's
// version) and the chain's match on 8 replicas' exact tables (one holding it whole, the others a
// quarter; each table 8,192 blocks, a full A100's worth), per KiB of prompt. The chain is hashed
// outside the loop (BM_PrefixHash measures that).
void BM_ExactIndexLookup8(benchmark::State& state) {
  const std::string prompt = promptOf(static_cast<size_t>(state.range(0)) * 1024);
  const std::vector<uint64_t> chain = fleet::kv_index::hashPromptBlocks(prompt, 16);
  fleet::kv_index::ExactIndexHub hub;
  auto snapshot = std::make_shared<fleet::kv_index::ExactIndexSnapshot>();
  int replicas[8] = {};
  for (int r = 0; r < 8; ++r) {
    std::unordered_set<uint64_t> blocks;
    const size_t held = r == 0 ? chain.size() : chain.size() / 4;
    blocks.insert(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(held));
    for (uint64_t filler = 1; blocks.size() < 8192; ++filler) blocks.insert(filler * 0x9E37ull);
    snapshot->replicas.emplace(&replicas[r],
                               std::make_shared<const fleet::kv_index::BlockTable>(blocks));
  }
  hub.publish(snapshot);
  fleet::kv_index::ExactIndexCache cache(&hub);
  bench::AllocCounter allocs;
  for (auto _ : state) {
    const fleet::kv_index::ExactIndexSnapshot* exact = cache.get();
    uint32_t best = 0;
    for (int r = 0; r < 8; ++r) {
      const fleet::kv_index::BlockTable* table = exact->find(&replicas[r]);
      if (table != nullptr) best = std::max(best, table->matchPrefix(chain));
    }
    benchmark::DoNotOptimize(best);
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * prompt.size()));
}
BENCHMARK(BM_ExactIndexLookup8)->Arg(1)->Arg(4)->Arg(16)->Arg(64);

// A probe whose matches are fixed: the strategy's own cost, without the index's.
class NoMatchProbe final : public routing::PrefixProbe {
 public:
  routing::PrefixMatch match(const fleet::ReplicaState&) const override { return {}; }
};

// A fleet of one model ("m") on 8 replicas, routed by prefix-cache.
std::shared_ptr<const fleet::FleetSnapshot> eightReplicas() {
  fleet::ModelSpec model;
  model.name = "m";
  for (int i = 0; i < 8; ++i) {
    model.replicas.push_back({"10.0.0." + std::to_string(i) + ":8000", {}});
  }
  fleet::FleetRegistry registry;
  registry.apply({model}, kNsPerSec, "prefix-cache");
  return registry.latest();
}

// One prefix-cache decision (blended with load-balance, as by default) on 8 replicas for a
// prompt of 100 blocks that no replica is known to hold: Arg 0 with homes off (load decides),
// Arg 1 with them on (the rendezvous ranking of the candidates). ns/op and allocs/op.
void BM_PrefixRouteUnknown8(benchmark::State& state) {
  const auto snapshot = eightReplicas();
  const fleet::ModelEntry& entry = snapshot->models[0];
  for (int i = 0; i < 8; ++i) entry.replicas[i].state->counters().running.store(i % 3);
  NoMatchProbe probe;
  probe.total_blocks = 100;
  probe.home_blocks = state.range(0) != 0 ? 4 : 0;
  routing::StrategySpec spec;
  routing::parseStrategySpec("prefix-cache", spec);
  routing::RouteRequest request{&spec, 0, {}, {}};
  request.prefix = &probe;
  Rng rng(1);
  routing::RoutingScratch scratch;
  routing::route(*snapshot, entry, request, rng, scratch);  // grow the scratch space once
  bench::AllocCounter allocs;
  uint64_t anchor = 0;
  for (auto _ : state) {
    probe.home_anchor = ++anchor * 0x9E3779B97F4A7C15ull;  // a new prefix each time
    routing::Decision d = routing::route(*snapshot, entry, request, rng, scratch);
    benchmark::DoNotOptimize(d.chosen);
  }
  allocs.report(state);
}
BENCHMARK(BM_PrefixRouteUnknown8)->Arg(0)->Arg(1);

// The approximate index's upkeep per routed request of 4 KiB (64 blocks), in all of a gateway's
// workers together: the routing worker's insert and, with Arg(0) workers sharing
// (routing.prefix_cache.share_between_workers), its copy of the chain into the others' rings and
// their inserts of it. Arg 1 is one worker (nothing shared). Requests are routed by the workers
// in turn, to 8 replicas in turn. ns/op and allocs/op.
void BM_PrefixIndexUpkeepPerRequest(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const auto snapshot = eightReplicas();
  std::unique_ptr<fleet::kv_index::RoutedChainExchange> exchange;
  if (workers > 1) {
    exchange = std::make_unique<fleet::kv_index::RoutedChainExchange>(
        workers, fleet::kv_index::RoutedChainExchange::defaultRingWords(workers));
  }
  const fleet::kv_index::PrefixCacheParams params;
  std::vector<std::unique_ptr<gateway::PrefixStage>> stages;
  for (int w = 0; w < workers; ++w) {
    stages.push_back(std::make_unique<gateway::PrefixStage>(params, nullptr, exchange.get(), w));
  }
  std::vector<std::vector<uint64_t>> chains;
  for (int c = 0; c < 64; ++c) {
    chains.push_back(fleet::kv_index::hashPromptBlocks(promptOf(4096) + std::to_string(c), 16));
  }
  auto routeOne = [&](uint64_t n) {
    const auto& chain = chains[n % chains.size()];
    gateway::PrefixStage& stage = *stages[n % stages.size()];
    stage.onRouted(*snapshot, snapshot->models[0], static_cast<int>(n % 8), chain);
    for (const auto& other : stages) {
      if (other.get() != &stage) other->absorbShared();
    }
  };
  for (uint64_t n = 0; n < 1024; ++n) routeOne(n);  // size every table once
  bench::AllocCounter allocs;
  uint64_t n = 0;
  for (auto _ : state) routeOne(n++);
  allocs.report(state);
}
BENCHMARK(BM_PrefixIndexUpkeepPerRequest)->Arg(1)->Arg(2)->Arg(4)->Arg(8);

}  // namespace
}  // namespace switchyard
