// The `name[]` filter of a /metrics request, as prometheus_client's ASGI app serves it (SGLang
// and vLLM mount it on /metrics): `GET /metrics?name[]=vllm:num_requests_running&name[]=…`
// answers only the metric families with a sample of one of those names. The emulator honours it
// so that gateways asking for the families they read (fleet::engineMetricsTarget) are served the
// way a real engine serves them.
// Pure, never throws on any input; fuzzed by tests/fuzz/metrics_filter_fuzz.cc.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::engine {

// The sample names asked for by the `name[]` parameters of `query` (the part of the request
// target after '?'), percent-decoded ('+' is a space, as in a form); a malformed escape is kept
// as written. Empty: no filter, the whole page.
std::vector<std::string> requestedSampleNames(std::string_view query);

// The families of `page` (text format 0.0.4: "# HELP"/"# TYPE" lines, then samples) that have a
// sample named in `names` — a sample's name is the text before '{' or ' ', so a histogram is
// asked for by its `_bucket`, `_sum` or `_count` series — with all of their lines, in page order.
std::string filterMetricsPage(std::string_view page, std::span<const std::string> names);

}  // namespace switchyard::engine
