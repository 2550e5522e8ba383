// `switchyard demo`: the embedded default. Starts an emulated heterogeneous fleet and a gateway
// as child processes on OS-chosen loopback ports, offers the same open-loop load once per
// strategy, prints a per-replica table for each, and stops everything it started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cli {

struct DemoOptions {
  std::vector<std::string> gpus = {"A100", "L20"};
  std::vector<std::string> strategies = {"round-robin", "least-request"};
  int requests = 60;
  double rate = 12;  // requests/s, Poisson
  int max_tokens = 32;
  uint64_t seed = 7;
};

int runDemo(const DemoOptions& options);

}  // namespace switchyard::cli
