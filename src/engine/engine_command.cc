#include "engine/engine_command.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "core/text_file.h"
#include "engine/batching_model.h"
#include "engine/engine_server.h"
#include "engine/kv_events_config.h"
#include "engine/perf_profiles.h"
#include "engine/throughput_table.h"

namespace switchyard::engine {
namespace {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// "HOST:PORT" or "[V6]:PORT"; "localhost" means 127.0.0.1.
std::optional<HostPort> parseListen(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  auto [end, error] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return std::nullopt;
  }
  return HostPort{host == "localhost" ? "127.0.0.1" : std::string(host),
                  static_cast<uint16_t>(port)};
}

// One replica to host, fully validated: what the host needs to bind and serve it.
struct ReplicaPlan {
  EngineServerOptions server;
  PerfConfig perf;
};

// Throws std::invalid_argument with an operator-facing message.
ReplicaPlan planReplica(const ProfileCatalog& catalog, const EngineCommandOptions& o,
                        const FaultConfig& faults) {
  std::optional<HostPort> listen = parseListen(o.listen);
  if (!listen)
    throw std::invalid_argument(fmt::format("listen must be HOST:PORT, got '{}'", o.listen));
  std::optional<Flavor> flavor = parseFlavor(o.flavor);
  if (!flavor) {
    throw std::invalid_argument(fmt::format("flavor must be vllm or sglang, got '{}'", o.flavor));
  }
  if (o.model.empty()) throw std::invalid_argument("model must not be empty");
  // The served name may be anything ("tiny-model"); its performance profile defaults to the
  // profile of that name, else the 7B.
  std::string profile = o.model_profile;
  if (profile.empty()) profile = catalog.findModel(o.model) ? o.model : "llama2-7b";
  ReplicaPlan plan;
  plan.perf = makePerfConfig(catalog, o.gpu, profile, o.tp);
  plan.perf.prefix_caching = !o.no_prefix_caching;
  // vLLM's scheduler switches (docs/engine-emulator.md, "Calibration").
  if (o.num_scheduler_steps < 1) throw std::invalid_argument("num-scheduler-steps must be >= 1");
  if (o.num_scheduler_steps > 1) plan.perf.num_scheduler_steps = o.num_scheduler_steps;
  if (o.no_chunked_prefill) plan.perf.chunked_prefill = false;
  plan.server.host = listen->host;
  plan.server.port = listen->port;
  plan.server.model = o.model;
  plan.server.flavor = *flavor;
  plan.server.seed = o.seed;
  plan.server.faults = faults;
  plan.server.api_key = o.api_key;
  if (o.kv_events_encoding != "map" && o.kv_events_encoding != "array") {
    throw std::invalid_argument(
        fmt::format("kv-events-encoding must be map or array, got '{}'", o.kv_events_encoding));
  }
  if (o.kv_events_endpoint.empty() && !o.kv_events_replay_endpoint.empty()) {
    throw std::invalid_argument("kv-events-replay-endpoint needs kv-events-endpoint");
  }
  KvEventsEndpoints kv{o.kv_events_endpoint, o.kv_events_replay_endpoint};
  if (!o.kv_events_config.empty()) {
    if (!o.kv_events_endpoint.empty()) {
      throw std::invalid_argument("give kv-events-config or kv-events-endpoint, not both");
    }
    if (std::string error = parseKvEventsConfig(o.kv_events_config, kv); !error.empty()) {
      throw std::invalid_argument(error);
    }
  }
  plan.server.kv_events_endpoint = kv.endpoint;
  plan.server.kv_events_replay_endpoint = kv.replay_endpoint;
  plan.server.kv_events_array = o.kv_events_encoding == "array";
  // The emulator's prompt hashes cover 16-token blocks.
  plan.server.prefix_hashes = plan.perf.block_size == kPrefixBlockTokens;
  return plan;
}

// `--replicas FILE`: a YAML list (or a map with a `replicas:` list) of entries with the keys
// listen, gpu, model, model_profile, tp, flavor, seed, kv_events_endpoint,
// kv_events_replay_endpoint; missing keys take the command-line values (not the KV-event
// endpoints: each replica binds its own).
std::vector<EngineCommandOptions> readReplicas(const EngineCommandOptions& defaults) {
  std::string error;
  const std::optional<std::string> text = readTextFile(defaults.replicas_path, &error);
  if (!text) throw std::invalid_argument(fmt::format("replicas file: {}", error));
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(
        fmt::format("replicas file '{}': {}", defaults.replicas_path, e.what()));
  }
  YAML::Node list = root.IsMap() ? root["replicas"] : root;
  if (!list || !list.IsSequence() || list.size() == 0) {
    throw std::invalid_argument(
        fmt::format("replicas file '{}': expected a non-empty list", defaults.replicas_path));
  }
  std::vector<EngineCommandOptions> replicas;
  try {
    for (const YAML::Node& node : list) {
      EngineCommandOptions o = defaults;
      o.listen = "127.0.0.1:0";
      if (node["listen"]) o.listen = node["listen"].as<std::string>();
      if (node["gpu"]) o.gpu = node["gpu"].as<std::string>();
      if (node["model"]) o.model = node["model"].as<std::string>();
      if (node["model_profile"]) o.model_profile = node["model_profile"].as<std::string>();
      if (node["tp"]) o.tp = node["tp"].as<int>();
      if (node["flavor"]) o.flavor = node["flavor"].as<std::string>();
      // A PUB endpoint per replica: the command line's would collide.
      o.kv_events_config.clear();
      o.kv_events_endpoint =
          node["kv_events_endpoint"] ? node["kv_events_endpoint"].as<std::string>() : std::string();
      o.kv_events_replay_endpoint = node["kv_events_replay_endpoint"]
                                        ? node["kv_events_replay_endpoint"].as<std::string>()
                                        : std::string();
      o.seed = node["seed"] ? node["seed"].as<uint64_t>() : defaults.seed + replicas.size();
      replicas.push_back(std::move(o));
    }
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(
        fmt::format("replicas file '{}': {}", defaults.replicas_path, e.what()));
  }
  return replicas;
}

}  // namespace

int runEngineCommand(const EngineCommandOptions& options) {
  std::vector<ReplicaPlan> plans;
  ProfileCatalog loaded;
  try {
    if (!options.profiles_path.empty()) loaded = loadProfilesFile(options.profiles_path);
    const ProfileCatalog& catalog = options.profiles_path.empty() ? builtinProfiles() : loaded;
    if (options.profile_table) {
      std::string profile = options.model_profile.empty() ? options.model : options.model_profile;
      if (!catalog.findModel(profile)) {
        throw std::invalid_argument(
            fmt::format("unknown model profile '{}' (known: {})", profile, catalog.modelNames()));
      }
      fmt::print("{}", formatThroughputTable(catalog, profile, options.table_prompt_tokens,
                                             options.table_max_tokens, options.table_concurrency));
      return 0;
    }
    FaultConfig faults;
    if (!options.faults_json.empty()) {
      Parsed<FaultConfig> parsed = parseFaults(options.faults_json);
      if (!parsed.value) throw std::invalid_argument("--faults: " + parsed.error);
      faults = *parsed.value;
    }
    std::vector<EngineCommandOptions> replicas = {options};
    if (!options.replicas_path.empty()) replicas = readReplicas(options);
    for (const EngineCommandOptions& replica : replicas) {
      plans.push_back(planReplica(catalog, replica, faults));
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "engine: {}\n", e.what());
    return 2;
  }

  try {
    EngineHost host;
    std::string line = "listening";
    for (ReplicaPlan& plan : plans) {
      line += " " + host.add(std::move(plan.server), std::make_unique<BatchingModel>(plan.perf));
    }
    // Tests and scripts read this line to learn the ports.
    fmt::print(stdout, "{}\n", line);
    std::fflush(stdout);
    host.run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "engine: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace switchyard::engine
