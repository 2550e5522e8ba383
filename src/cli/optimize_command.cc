#include "cli/optimize_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <deque>
#include <memory>

#include "core/text_file.h"
#include "gateway/optimize_service.h"
#include "optimizer/load_json.h"
#include "optimizer/optimizer.h"
#include "profile/profile_json.h"

namespace switchyard::cli {
namespace {

struct OptimizeOptions {
  std::string config;
  bool once = false;
  std::vector<std::string> profiles;
  std::string load;
  int slice_factor = 4;
  double headroom = 0;
  int time_limit_ms = 2000;
  std::vector<std::string> max_replicas;
  bool print_model = false;
};

int runOnce(const OptimizeOptions& o) {
  if (o.profiles.empty() || o.load.empty()) {
    fmt::print(stderr,
               "optimize --once: needs --profile FILE (one per deployment) and --load FILE\n");
    return 2;
  }
  std::string error;
  std::deque<profile::GpuProfile> profiles;  // stable addresses for the model
  optimizer::MixProblem problem;
  problem.slice_factor = o.slice_factor;
  problem.headroom = o.headroom;
  const auto load_text = readTextFile(o.load, &error);
  const auto load = load_text ? optimizer::parseLoadJson(*load_text, &error) : std::nullopt;
  if (!load) {
    fmt::print(stderr, "optimize: {}: {}\n", o.load, error);
    return 2;
  }
  for (const std::string& path : o.profiles) {
    const auto text = readTextFile(path, &error);
    if (!text) {
      fmt::print(stderr, "optimize: {}\n", error);
      return 2;
    }
    auto parsed = profile::parseProfileJson(*text);
    if (!parsed.profile) {
      fmt::print(stderr, "optimize: profile {}: {}\n", path, parsed.error);
      return 2;
    }
    if (!load->model.empty() && !parsed.profile->model.empty() &&
        parsed.profile->model != load->model) {
      fmt::print(stderr, "optimize: profile {} is for model {}, the load for {}\n", path,
                 parsed.profile->model, load->model);
      return 2;
    }
    for (const auto& other : profiles) {
      if (other.deployment == parsed.profile->deployment) {
        fmt::print(stderr, "optimize: two profiles for deployment {}\n", other.deployment);
        return 2;
      }
    }
    profiles.push_back(std::move(*parsed.profile));
    optimizer::DeploymentSpec spec;
    spec.name = profiles.back().deployment;
    spec.cost = profiles.back().cost;
    spec.profile = &profiles.back();
    problem.deployments.push_back(spec);
  }
  for (const std::string& limit : o.max_replicas) {
    const size_t eq = limit.find('=');
    bool found = false;
    int value = -1;
    if (eq != std::string::npos) {
      try {
        value = std::stoi(limit.substr(eq + 1));
      } catch (const std::exception&) {
        value = -1;
      }
    }
    for (auto& d : problem.deployments) {
      if (eq != std::string::npos && d.name == limit.substr(0, eq) && value >= 0) {
        d.upper = value;
        found = true;
      }
    }
    if (!found) {
      fmt::print(stderr,
                 "optimize: --max-replicas {}: expected DEPLOYMENT=N for a known "
                 "deployment\n",
                 limit);
      return 2;
    }
  }
  problem.cells = load->cells;
  optimizer::SolveOptions solve;
  solve.time_limit = static_cast<TimeNs>(o.time_limit_ms) * kNsPerMs;
  const optimizer::Recommendation r = optimizer::recommend(problem, solve);
  if (o.print_model) fmt::print(stderr, "{}", r.model.toLp());
  fmt::print("{}", optimizer::recommendationJson(r));
  return 0;
}

}  // namespace

void addOptimizeCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<OptimizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize", "GPU-mix optimizer: the service (--config) or one solve (--once)");
  cmd->add_option("--config", o->config, "optimizer service YAML (see docs/optimizer.md)");
  cmd->add_flag("--once", o->once, "solve once for --load and --profile, print JSON");
  cmd->add_option("--profile", o->profiles, "profile JSON, one per deployment (with --once)");
  cmd->add_option("--load", o->load, "load cells JSON (with --once)");
  cmd->add_option("--slice-factor", o->slice_factor, "slices per load cell")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--headroom", o->headroom, "plan for (1 + H) x the load")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--time-limit-ms", o->time_limit_ms, "solver time limit")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  cmd->add_option("--max-replicas", o->max_replicas, "availability, DEPLOYMENT=N (with --once)");
  cmd->add_flag("--print-model", o->print_model, "print the MILP (CPLEX LP) to stderr");
  cmd->callback([o, &exit_code] {
    if (o->once) {
      exit_code = runOnce(*o);
    } else if (!o->config.empty()) {
      exit_code = gateway::runOptimizeService(o->config);
    } else {
      fmt::print(stderr, "optimize: give --config FILE, or --once with --profile and --load\n");
      exit_code = 2;
    }
  });
}

}  // namespace switchyard::cli
