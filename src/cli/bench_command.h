// `switchyard bench`: closed-loop load against one OpenAI-compatible endpoint (an emulated
// engine or a gateway), printing the per-pod report and one machine-readable summary line:
//   result concurrency=C requests=N ok=K output_tokens=T wall_s=W tokens_per_s=R
//          ttft_p50_ms=… tpot_mean_ms=…
#pragma once

#include <cstdint>
#include <string>

namespace switchyard::cli {

struct BenchOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string model = "llama2-7b";
  int concurrency = 1;
  int requests = 32;
  int max_tokens = 128;
  int prompt_words = 16;
  uint64_t seed = 1;
};

// 0 when every request succeeded, 1 otherwise.
int runBench(const BenchOptions& options);

}  // namespace switchyard::cli
