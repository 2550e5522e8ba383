// LoadGenerator: drives an OpenAI-compatible endpoint with chat requests and records, per
// request, where it went and how long it took (time to first token, end to end, tokens).
//
// Open loop by default: arrivals follow a Poisson process at `rate` requests/s from a seeded
// random source, so the same seed gives the same arrival sequence for every strategy compared,
// and a slow server cannot slow the offered load down. With rate 0 it runs closed loop with
// `concurrency` clients. Single-threaded (one io_context); bounded by `requests` and `deadline`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"

namespace switchyard::loadgen {

struct LoadSpec {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string path = "/v1/chat/completions";
  std::string model = "llama2-7b";
  std::string strategy;  // routing-strategy header; empty: none
  int requests = 100;
  double rate = 0;       // requests/s (open loop); 0: closed loop
  int concurrency = 8;   // closed loop only
  int max_tokens = 32;
  int prompt_words = 16;
  bool stream = true;
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
  std::string error;
};

struct LoadReport {
  std::vector<RequestRecord> records;
  TimeNs wall = 0;
};

LoadReport runLoad(const LoadSpec& spec);

// A plain-text table: one row per target pod plus a total row, with request share, tokens,
// TTFT and end-to-end percentiles. `labels` optionally names each pod (e.g. its GPU type).
std::string formatReport(const LoadReport& report,
                         const std::map<std::string, std::string>& labels = {});

// The p-th percentile (0..100) of `values` by nearest rank; NaN when empty. Sorts in place.
double percentile(std::vector<double>& values, double p);

}  // namespace switchyard::loadgen
