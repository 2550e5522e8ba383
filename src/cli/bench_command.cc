#include "cli/bench_command.h"

#include <fmt/format.h>

#include <vector>

#include "loadgen/load_generator.h"

namespace switchyard::cli {

int runBench(const BenchOptions& options) {
  loadgen::LoadSpec spec;
  spec.host = options.host;
  spec.port = options.port;
  spec.model = options.model;
  spec.requests = options.requests;
  spec.rate = 0;  // closed loop
  spec.concurrency = options.concurrency;
  spec.max_tokens = options.max_tokens;
  spec.prompt_words = options.prompt_words;
  spec.seed = options.seed;
  loadgen::LoadReport report = loadgen::runLoad(spec);

  int ok = 0;
  int64_t tokens = 0;
  std::vector<double> ttft_ms;
  double tpot_sum_ms = 0;
  int tpot_count = 0;
  for (const loadgen::RequestRecord& r : report.records) {
    if (r.status != 200 || !r.error.empty()) continue;
    ++ok;
    tokens += r.output_tokens;
    // first_byte and done are durations since the request was sent.
    if (r.first_byte >= 0) ttft_ms.push_back(static_cast<double>(r.first_byte) / 1e6);
    if (r.first_byte >= 0 && r.done >= 0 && r.output_tokens > 1) {
      tpot_sum_ms += static_cast<double>(r.done - r.first_byte) / 1e6 /
                     static_cast<double>(r.output_tokens - 1);
      ++tpot_count;
    }
  }
  const double wall_s = static_cast<double>(report.wall) / 1e9;
  fmt::print("{}", loadgen::formatReport(report));
  fmt::print(
      "result concurrency={} requests={} ok={} output_tokens={} wall_s={:.3f} tokens_per_s={:.1f} "
      "ttft_p50_ms={:.2f} tpot_mean_ms={:.3f}\n",
      options.concurrency, options.requests, ok, tokens, wall_s,
      wall_s > 0 ? static_cast<double>(tokens) / wall_s : 0.0, loadgen::percentile(ttft_ms, 50),
      tpot_count ? tpot_sum_ms / tpot_count : 0.0);
  return ok == options.requests ? 0 : 1;
}

}  // namespace switchyard::cli
