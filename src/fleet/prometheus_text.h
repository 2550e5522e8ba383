// A streaming parser for the Prometheus text exposition format (version 0.0.4).
//
// It walks the text once without allocating and reports each sample line (metric name, the raw
// label block, the value) to a callback. Comment, HELP and TYPE lines are skipped. Malformed lines
// are skipped, never fatal: a replica's /metrics output is untrusted input. Thread-compatible,
// stateless.
#pragma once

#include <string_view>

namespace switchyard::fleet {

struct PrometheusSample {
  std::string_view name;    // e.g. "vllm:num_requests_running"
  std::string_view labels;  // the text between '{' and '}', without the braces; empty if none
  double value = 0;         // parsed value; NaN / +Inf / -Inf are passed through as doubles
};

// Calls `on_sample(const PrometheusSample&)` for every well-formed sample line, in order.
// Returns the number of lines that were skipped as malformed.
template <typename OnSample>
int forEachPrometheusSample(std::string_view text, OnSample&& on_sample);

namespace internal {
// Parses one line (no trailing newline). Returns false if it is not a sample line.
bool parsePrometheusLine(std::string_view line, PrometheusSample& out, bool& malformed);
}  // namespace internal

template <typename OnSample>
int forEachPrometheusSample(std::string_view text, OnSample&& on_sample) {
  int malformed_lines = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    PrometheusSample sample;
    bool malformed = false;
    if (internal::parsePrometheusLine(line, sample, malformed)) {
      on_sample(sample);
    } else if (malformed) {
      ++malformed_lines;
    }
  }
  return malformed_lines;
}

}  // namespace switchyard::fleet
