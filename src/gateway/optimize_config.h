// The optimizer service's YAML (`switchyard optimize --config FILE`, docs/configuration.md,
// "Optimizer"). parseOptimizeConfig() throws ConfigError naming the key; loadOptimizeProfiles()
// reads every deployment's profile source and checks it against the config (model, SLO, at
// least one servable cell), throwing ConfigError with the deployment's name. Start-up and
// reload only (blocking reads of files and Redis).
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "optimizer/stability.h"
#include "profile/profile.h"

namespace switchyard::gateway {

struct OptimizeDeployment {
  std::string ns = "default";  // `namespace`
  std::string name;
  std::string model;
  std::string gpu;
  std::optional<double> cost;  // overrides the profile's
  std::string profile;         // file or redis://host:port/?model=M
  int min_replicas = 0;        // kept when the model has no load
  // The config names min_replicas; otherwise the Deployment's model.aibrix.ai/min_replicas
  // label, as the gateways' discovery publishes it in Redis, applies when known.
  bool min_replicas_configured = false;
  int max_replicas = -1;       // availability; -1: unbounded
};

struct OptimizeLoadSource {
  enum class Kind { kGateways, kRedis, kFile };
  Kind kind = Kind::kGateways;
  std::vector<std::string> gateways;  // admin addresses, http://host:port
  std::string redis;                  // redis://host:port[/db]
  bool aibrix_layout = false;         // read aibrix:<model>_request_trace_<ts> instead
  std::string key_prefix = "sy";
  std::string file;  // a load file ({"model", "cells"}), re-read every interval
};

struct OptimizeConfig {
  std::string listen = "127.0.0.1:8080";
  TimeNs interval = 10 * kNsPerSec;
  int64_t window_s = 240;
  std::optional<profile::Slo> slo;  // when set, every profile must have been made for it
  int slice_factor = 4;
  double headroom = 0;
  TimeNs time_limit = 500 * kNsPerMs;
  bool hundredths = true;  // vllm:deployment_replicas in hundredths of a replica (AIBrix)
  optimizer::StabilitySettings stability;
  OptimizeLoadSource load;
  std::vector<OptimizeDeployment> deployments;
};

OptimizeConfig parseOptimizeConfig(const std::string& yaml_text);
OptimizeConfig loadOptimizeConfigFile(const std::string& path);

// One profile per deployment, in config order.
std::deque<profile::GpuProfile> loadOptimizeProfiles(const OptimizeConfig& config);

}  // namespace switchyard::gateway
