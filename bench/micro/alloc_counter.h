// Counts heap allocations made through global operator new in the micro_bench binary, so every
// benchmark can report allocs/op next to ns/op. The replacement operators live in
// alloc_counter_bench.cc (named *_bench.cc so that only micro_bench links them).
// The counter is a relaxed atomic: cheap, and exact for single-threaded benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

namespace switchyard::bench {

uint64_t allocationCount();

// Usage: AllocCounter counter; for (auto _ : state) {...} counter.report(state);
class AllocCounter {
 public:
  AllocCounter() : start_(allocationCount()) {}
  void report(benchmark::State& state) const {
    double per_op = state.iterations() == 0
                        ? 0.0
                        : static_cast<double>(allocationCount() - start_) /
                              static_cast<double>(state.iterations());
    state.counters["allocs/op"] = benchmark::Counter(per_op);
  }

 private:
  uint64_t start_;
};

}  // namespace switchyard::bench
