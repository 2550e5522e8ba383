#include "gateway/slo_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "core/text_file.h"
#include "engine/perf_profiles.h"
#include "gateway/config.h"
#include "gateway/config_values.h"
#include "profile/emulated_profile.h"
#include "profile/profile_json.h"

namespace switchyard::gateway {
namespace {

// Emulated profiles by (GPU, model, objective): a reload that keeps them does not recompute them.
profile::GpuProfile emulatedProfile(const std::string& gpu, const std::string& model,
                                    const profile::Slo& slo, const std::string& where) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, std::string>, profile::GpuProfile> cache;
  const auto key = std::make_tuple(gpu, model, slo.describe());
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  engine::PerfConfig config;
  try {
    config = engine::makePerfConfig(engine::builtinProfiles(), gpu, model);
  } catch (const std::exception& e) {
    throw ConfigError(where + ": cannot emulate: " + e.what() +
                      " (give a profile file, or name the model: emulated:MODEL)");
  }
  return cache.emplace(key, profile::emulatedGpuProfile(config, slo)).first->second;
}

profile::GpuProfile profileFromFile(const std::string& path, const std::string& where) {
  std::string error;
  const auto text = readTextFile(path, &error);
  if (!text) throw ConfigError(where + ": " + error);
  profile::ProfileParse parsed = profile::parseProfileJson(*text);
  if (!parsed.profile) throw ConfigError(where + ": " + path + ": " + parsed.error);
  if (!parsed.profile->hasSteps()) {
    throw ConfigError(where + ": " + path +
                      " has no measured steps (an AIBrix profile?): SLO routing predicts latency "
                      "at a replica's load from them; regenerate it with switchyard gen-profile");
  }
  return std::move(*parsed.profile);
}

}  // namespace

std::shared_ptr<const profile::SloProfiles> parseSloProfiles(const YAML::Node& node,
                                                             const std::string& where,
                                                             const std::string& model_name) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping");
  auto out = std::make_shared<profile::SloProfiles>();
  bool has_objective = false;
  int percentile = -1;
  std::vector<std::pair<std::string, std::string>> sources;
  std::vector<std::pair<std::string, double>> costs;  // per GPU type, overriding the profiles'
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = where + "." + key;
    if (key == "objective") {
      std::string error;
      const auto slo = profile::Slo::parse(scalar<std::string>(it->second, full), &error);
      if (!slo || !slo->any()) throw ConfigError(full + ": " + (error.empty() ? "empty" : error));
      out->objective = *slo;
      has_objective = true;
    } else if (key == "percentile") {
      percentile = static_cast<int>(number(it->second, full, 0, 99));
      if (percentile != 0 && percentile != 50 && percentile != 90 && percentile != 99) {
        throw ConfigError(full + ": must be 0 (mean), 50, 90 or 99");
      }
    } else if (key == "profiles") {
      if (!it->second.IsMap() || it->second.size() == 0) {
        throw ConfigError(full + ": must map GPU types to profile files (or `emulated`)");
      }
      for (auto p = it->second.begin(); p != it->second.end(); ++p) {
        sources.emplace_back(
            p->first.as<std::string>(),
            scalar<std::string>(p->second, full + "." + p->first.as<std::string>()));
      }
    } else if (key == "costs") {
      if (!it->second.IsMap()) throw ConfigError(full + ": must map GPU types to prices");
      for (auto c = it->second.begin(); c != it->second.end(); ++c) {
        const std::string gpu = c->first.as<std::string>();
        const double cost = number(c->second, full + "." + gpu, 0, 1e9);
        if (!(cost > 0)) throw ConfigError(full + "." + gpu + ": must be above 0");
        costs.emplace_back(gpu, cost);
      }
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (sources.empty()) throw ConfigError(where + ".profiles: required");
  if (percentile >= 0) out->objective.percentile = percentile;
  // File profiles first: without an objective the first one's SLO is it.
  for (const auto& [gpu, source] : sources) {
    if (source.rfind("emulated", 0) == 0) continue;
    out->gpus.push_back(gpu);
    out->profiles.push_back(profileFromFile(source, where + ".profiles." + gpu));
    if (!has_objective) {
      out->objective = out->profiles.back().slo;
      if (percentile >= 0) out->objective.percentile = percentile;
      has_objective = out->objective.any();
    }
  }
  if (!has_objective) {
    throw ConfigError(where + ".objective: required when no profile file states an SLO");
  }
  for (const auto& [gpu, source] : sources) {
    if (source.rfind("emulated", 0) != 0) continue;
    if (source != "emulated" && source.rfind("emulated:", 0) != 0) {
      throw ConfigError(where + ".profiles." + gpu + ": '" + source +
                        "' is neither a file nor emulated[:MODEL]");
    }
    const std::string model = source == "emulated" ? model_name : source.substr(9);
    out->gpus.push_back(gpu);
    out->profiles.push_back(
        emulatedProfile(gpu, model, out->objective, where + ".profiles." + gpu));
  }
  for (const auto& [gpu, cost] : costs) {
    const auto at = std::find(out->gpus.begin(), out->gpus.end(), gpu);
    if (at == out->gpus.end()) {
      throw ConfigError(where + ".costs." + gpu + ": no profile names this GPU type");
    }
    out->profiles[static_cast<size_t>(at - out->gpus.begin())].cost = cost;
  }
  out->findReservedTypes();
  return out;
}

}  // namespace switchyard::gateway
