#include "engine/throughput_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "engine/batching_model.h"

namespace switchyard::engine {

ClosedLoopResult simulateClosedLoop(const PerfConfig& config, int concurrency, int prompt_tokens,
                                    int max_tokens, int requests) {
  BatchingModel model(config);
  ClosedLoopResult result;
  RequestId next_id = 1;
  int submitted = 0;
  int completed = 0;
  int64_t tokens = 0;
  int64_t ttft_count = 0;
  int64_t itl_count = 0;
  double ttft_sum = 0;
  double itl_sum = 0;
  TimeNs now = 0;
  auto submit = [&] {
    model.submit(ModelRequest{next_id++, prompt_tokens, max_tokens, {}}, now);
    ++submitted;
  };
  for (int i = 0; i < concurrency && submitted < requests; ++i) submit();
  std::vector<TokenEvent> events;
  while (completed < requests) {
    now = model.nextEventTime();
    if (now < 0) break;
    events.clear();
    model.advance(now, events);
    // Before this step's arrivals: what the scheduler left waiting.
    result.max_waiting = std::max(result.max_waiting, model.load().waiting);
    for (const TokenEvent& event : events) {
      tokens += event.tokens;
      if (event.previous_token < 0) {
        ttft_sum += static_cast<double>(event.time - event.arrival) / 1e9;
        ++ttft_count;
      } else {
        itl_sum += static_cast<double>(event.time - event.previous_token) / 1e9;
        ++itl_count;
      }
      if (event.finished) {
        ++completed;
        if (submitted < requests) submit();
      }
    }
  }
  result.output_tokens_per_s = now > 0 ? static_cast<double>(tokens) / (now / 1e9) : 0;
  result.mean_ttft_s = ttft_count ? ttft_sum / ttft_count : 0;
  result.mean_itl_s = itl_count ? itl_sum / itl_count : 0;
  result.preemptions = model.load().preemptions_total;
  return result;
}

std::string formatThroughputTable(const ProfileCatalog& catalog, const std::string& model,
                                  int prompt_tokens, int max_tokens,
                                  const std::vector<int>& concurrencies, int requests_per_client) {
  std::string out = fmt::format(
      "Predicted output tokens/s of one {} replica (prompt {} tokens, {} output tokens, closed "
      "loop, {} requests per client)\n\n| GPU | KV cache tokens | step at batch 1 (ms) |",
      model, prompt_tokens, max_tokens, requests_per_client);
  for (int c : concurrencies) fmt::format_to(std::back_inserter(out), " c={} |", c);
  out += "\n|---|---|---|";
  for (size_t i = 0; i < concurrencies.size(); ++i) out += "---|";
  out += "\n";
  for (const GpuSpec& gpu : catalog.gpus) {
    PerfConfig config;
    try {
      config = makePerfConfig(catalog, gpu.name, model);
    } catch (const std::exception&) {
      fmt::format_to(std::back_inserter(out), "| {} | does not fit | |", gpu.name);
      for (size_t i = 0; i < concurrencies.size(); ++i) out += " |";
      out += "\n";
      continue;
    }
    BatchingModel probe(config);
    fmt::format_to(std::back_inserter(out), "| {} | {} | {:.2f} |", gpu.name,
                   config.kvCapacityTokens(), probe.stepDurationNs(1, prompt_tokens) / 1e6);
    for (int concurrency : concurrencies) {
      ClosedLoopResult r = simulateClosedLoop(config, concurrency, prompt_tokens, max_tokens,
                                              concurrency * requests_per_client);
      fmt::format_to(std::back_inserter(out), " {:.0f} |", r.output_tokens_per_s);
    }
    out += "\n";
  }
  return out;
}

}  // namespace switchyard::engine
