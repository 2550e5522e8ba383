// LoadGenerator: drives an OpenAI-compatible endpoint with chat requests and records, per
// request, where it went and how long it took (time to first token, end to end, tokens).
//
// Open loop by default: arrivals follow a Poisson process at `rate` requests/s from a seeded
// random source, so the same seed gives the same arrival sequence for every strategy compared,
// and a slow server cannot slow the offered load down. With rate 0 it runs closed loop with
// `concurrency` clients. Single-threaded (one io_context); bounded by `requests` and `deadline`.
//
// Request shapes: every request has `prompt_words` and `max_tokens` unless `mix` is set, in which
// case each request draws a class by weight and then uniform prompt and output lengths from the
// class's ranges, all from the same seeded source before the run starts: a seed fixes the whole
// sequence of (arrival time, shape, prompt text).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"

namespace switchyard::loadgen {

// One kind of request in a mix, e.g. chat (short prompt, medium output) or summarisation (long
// prompt, short output). Ranges are inclusive; a prompt word is about 1.7 tokens (7 characters).
struct RequestClass {
  std::string name;
  double weight = 1;
  int prompt_words_min = 16;
  int prompt_words_max = 16;
  int max_tokens_min = 32;
  int max_tokens_max = 32;
  std::string gpu;  // sent as x-switchyard-gpu (the class is pinned to that GPU type); "" none
};

// 80 % chat (20–120 words ≈ 35–200 prompt tokens, 64–192 output tokens) and 20 % summarisation
// or code (400–800 words ≈ 700–1400 prompt tokens, 16–48 output tokens).
std::vector<RequestClass> defaultMix();

// Parses "name:weight:pmin-pmax:omin-omax,…" (prompt words, output tokens); nullopt if malformed.
std::optional<std::vector<RequestClass>> parseMix(const std::string& text);

struct LoadSpec {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string path = "/v1/chat/completions";
  std::string model = "llama2-7b";
  std::string strategy;  // routing-strategy header; empty: none
  int requests = 100;
  double rate = 0;       // requests/s (open loop); 0: closed loop
  // Open loop at these send times (ns from the start, ascending) instead of Poisson at `rate`:
  // lets another driver replay the same arrivals. At most `requests` are used.
  std::vector<TimeNs> send_at;
  int concurrency = 8;   // closed loop only
  TimeNs ramp = 0;       // closed loop: client k starts at k·ramp/concurrency (no lock-step burst)
  int max_tokens = 32;
  int prompt_words = 16;
  std::vector<RequestClass> mix;  // empty: every request has prompt_words and max_tokens
  bool stream = true;
  bool ignore_eos = false;  // ask the engine for exactly max_tokens (vLLM/SGLang `ignore_eos`)
  uint64_t seed = 1;
  TimeNs request_timeout = 120 * kNsPerSec;
  TimeNs deadline = 300 * kNsPerSec;  // the whole run
};

struct RequestRecord {
  int status = 0;  // 0: no response
  std::string target_pod;
  TimeNs sent = 0;        // relative to the start of the run
  TimeNs first_byte = -1; // first body byte after sending; -1 if none
  TimeNs done = -1;
  int64_t output_tokens = 0;
  int64_t prompt_tokens = -1;  // from the response's usage; -1 when it had none
  std::string error;
  int request_class = -1;  // index into LoadSpec::mix; -1 without a mix
  int prompt_words = 0;
  int max_tokens = 0;
};

// Time per output token after the first, (e2e − ttft) / (tokens − 1), in ns; NaN when the
// request failed or produced fewer than two tokens.
double tpotNs(const RequestRecord& record);

struct LoadReport {
  std::vector<RequestRecord> records;
  TimeNs wall = 0;
};

LoadReport runLoad(const LoadSpec& spec);

// A plain-text table: one row per target pod plus a total row, with request share, tokens,
// TTFT and end-to-end percentiles. `labels` optionally names each pod (e.g. its GPU type).
std::string formatReport(const LoadReport& report,
                         const std::map<std::string, std::string>& labels = {});

// What a request must meet to count as goodput; a limit of 0 is not checked.
struct Slo {
  double tpot_ms = 50;
  double ttft_ms = 0;
  double e2e_ms = 0;
};

bool meetsSlo(const RequestRecord& record, const Slo& slo);

// One group of requests (a GPU type, or "total"), counting those sent in [from, to).
struct GroupStats {
  std::string label;
  int requests = 0;
  int ok = 0;
  int good = 0;  // ok and meeting the SLO
  int64_t output_tokens = 0;
  double qps = 0;    // requests sent per second of the window
  double share = 0;  // fraction of all requests in the window
  double ttft_p50_ms = 0, ttft_p99_ms = 0;
  double tpot_p50_ms = 0, tpot_p99_ms = 0;
  double e2e_p50_ms = 0, e2e_p99_ms = 0;
  double goodputPercent() const { return requests ? 100.0 * good / requests : 0; }
};

// Groups by `labels[target_pod]` (the pod itself when unlabelled); the last entry is "total".
// Only requests sent in [from, to) count; to <= 0 means the end of the run.
std::vector<GroupStats> summarize(const LoadReport& report,
                                  const std::map<std::string, std::string>& labels,
                                  const Slo& slo, TimeNs from = 0, TimeNs to = 0);

// GET http://host:port/path with a short timeout (blocking; for scrapes between runs).
std::optional<std::string> httpGet(const std::string& host, uint16_t port,
                                   const std::string& path, TimeNs timeout = 2 * kNsPerSec);

// The sum of every sample of `name` in Prometheus text; nullopt when absent.
std::optional<double> metricSum(const std::string& text, const std::string& name);

// The p-th percentile (0..100) of `values` by nearest rank; NaN when empty. Sorts in place.
double percentile(std::vector<double>& values, double p);

}  // namespace switchyard::loadgen
