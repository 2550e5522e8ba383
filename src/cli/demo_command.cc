#include "cli/demo_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/child_process.h"
#include "loadgen/load_generator.h"

namespace switchyard::cli {
namespace {

using namespace std::chrono_literals;

std::string selfPath() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("switchyard") : path.string();
}

// Starts `switchyard ARGS…` and waits for its `listening` line.
std::unique_ptr<ChildProcess> start(const std::string& self, std::vector<std::string> args,
                                    std::vector<uint16_t>& ports) {
  args.insert(args.begin(), self);
  auto child = std::make_unique<ChildProcess>(std::move(args));
  ports = child->waitForListening(deadlineIn(10s));
  return child;
}

}  // namespace

int runDemo(const DemoOptions& options) {
  const std::string self = selfPath();
  std::vector<std::unique_ptr<ChildProcess>> engines;
  std::string replicas;
  std::map<std::string, std::string> gpu_of;
  for (size_t i = 0; i < options.gpus.size(); ++i) {
    std::vector<uint16_t> ports;
    engines.push_back(start(self,
                            {"engine", "--gpu", options.gpus[i], "--model", "llama2-7b",
                             "--listen", "127.0.0.1:0", "--seed", std::to_string(i + 1)},
                            ports));
    if (ports.size() != 1) {
      std::fprintf(stderr, "demo: engine %s did not start\n", options.gpus[i].c_str());
      return 1;
    }
    const std::string address = fmt::format("127.0.0.1:{}", ports[0]);
    gpu_of[address] = options.gpus[i];
    replicas += fmt::format("      - address: {}\n        labels: {{ gpu: {}, engine: vllm }}\n",
                            address, options.gpus[i]);
  }

  const std::string config_path =
      (std::filesystem::temp_directory_path() / fmt::format("switchyard-demo-{}.yaml", ::getpid()))
          .string();
  {
    std::ofstream config(config_path);
    config << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
              "routing: { default_strategy: least-request }\n"
              "models:\n  - name: llama2-7b\n    replicas:\n"
           << replicas;
  }
  std::vector<uint16_t> gateway_ports;
  auto gateway = start(self, {"gateway", "--config", config_path}, gateway_ports);
  std::filesystem::remove(config_path);
  if (gateway_ports.size() != 2) {
    std::fprintf(stderr, "demo: the gateway did not start\n");
    return 1;
  }

  std::printf("\nSwitchyard demo: %zu emulated replicas (", options.gpus.size());
  for (size_t i = 0; i < options.gpus.size(); ++i) {
    std::printf("%s%s", i ? ", " : "", options.gpus[i].c_str());
  }
  std::printf("), one gateway on 127.0.0.1:%u (admin %u)\n", gateway_ports[0], gateway_ports[1]);
  std::printf("load: %d streamed chat requests, Poisson arrivals at %.1f/s, %d output tokens "
              "each, seed %llu (the same arrivals for every strategy)\n",
              options.requests, options.rate, options.max_tokens,
              static_cast<unsigned long long>(options.seed));

  int failed = 0;
  for (const std::string& strategy : options.strategies) {
    loadgen::LoadSpec spec;
    spec.port = gateway_ports[0];
    spec.strategy = strategy;
    spec.requests = options.requests;
    spec.rate = options.rate;
    spec.max_tokens = options.max_tokens;
    spec.seed = options.seed;
    spec.deadline = 120 * kNsPerSec;
    const loadgen::LoadReport report = loadgen::runLoad(spec);
    std::printf("\nrouting-strategy: %s\n%s", strategy.c_str(),
                loadgen::formatReport(report, gpu_of).c_str());
    for (const auto& record : report.records) failed += record.status != 200;
  }
  std::printf("\n%d of %zu requests failed\n", failed,
              options.requests * options.strategies.size());
  std::fflush(stdout);

  gateway.reset();  // SIGTERM, wait, reap
  engines.clear();
  return failed == 0 ? 0 : 1;
}

}  // namespace switchyard::cli
