// Prefix-cache routing's hot path per KiB of prompt: hashing the prompt into its block chain
// (XXH3, 16-token blocks of 64 bytes), looking the chain up on 8 replicas' indexes (one holding
// it whole, the others a quarter), and inserting it for the chosen one. ns/op, bytes/s and
// allocs/op (target 0 once warm).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "alloc_counter.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/prefix_index.h"
#include "fleet/kv_index/prompt_blocks.h"

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

}  // namespace
}  // namespace switchyard
