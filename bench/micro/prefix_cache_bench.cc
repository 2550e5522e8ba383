// Prefix-cache routing's hot path per KiB of prompt: hashing the prompt into its block chain
// (XXH3, 16-token blocks of 64 bytes), looking the chain up on 8 replicas' indexes (one holding
// it whole, the others a quarter), and inserting it for the chosen one. ns/op, bytes/s and
// allocs/op (target 0 once warm).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "alloc_counter.h"
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

}  // namespace
}  // namespace switchyard
