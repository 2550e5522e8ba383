#include "sim/scenario.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>
#include <set>

#include "admission/admission_config.h"
#include "core/text_file.h"
#include "core/yaml_values.h"
#include "fleet/routing_knobs_config.h"
#include "fleet/scrape_policy_config.h"
#include "health/health_config.h"
#include "routing/strategy_spec.h"

namespace switchyard::sim {
namespace {

constexpr double kMaxSeconds = 30.0 * 86400;  // a month of simulated time

// A path in a scenario file is relative to the file's folder.
std::string resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// Calls `on_key(key, value, full key)` for each entry of a mapping; an entry it does not know
// (returns false) is an error naming the key and its line.
template <typename OnKey>
void forEachKey(const YAML::Node& node, const std::string& where, OnKey on_key) {
  if (!node.IsMap()) throw ConfigError(where + ": must be a mapping", lineOf(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = scalar<std::string>(it->first, where);
    const std::string full = where.empty() ? key : where + "." + key;
    if (!on_key(key, it->second, full)) {
      throw ConfigError(full + ": unknown key", lineOf(it->first));
    }
  }
}

TimeNs seconds(const YAML::Node& node, const std::string& key, double lo = 0,
               double hi = kMaxSeconds) {
  return static_cast<TimeNs>(std::llround(number(node, key, lo, hi) * kNsPerSec));
}

TimeNs milliseconds(const YAML::Node& node, const std::string& key, double lo = 0,
                    double hi = kMaxSeconds * 1000) {
  return static_cast<TimeNs>(std::llround(number(node, key, lo, hi) * kNsPerMs));
}

int integer(const YAML::Node& node, const std::string& key, double lo, double hi) {
  const double v = number(node, key, lo, hi);
  if (v != std::floor(v)) throw ConfigError(key + ": must be a whole number", lineOf(node));
  return static_cast<int>(v);
}

// A token count: 32 | [16, 64] | {uniform: [16, 64]} | {lognormal: {median: 200, sigma: 1},
// min: 4, max: 2048} (min and max clamp any form given as a mapping).
TokenCount parseTokenCount(const YAML::Node& node, const std::string& where, bool words) {
  TokenCount t;
  t.words = words;
  auto range = [&](const YAML::Node& r, const std::string& key) {
    if (!r.IsSequence() || r.size() != 2) {
      throw ConfigError(key + ": must be [low, high]", lineOf(r));
    }
    t.kind = TokenCount::Kind::kUniform;
    t.a = integer(r[0], key + "[0]", 1, 1 << 20);
    t.b = integer(r[1], key + "[1]", 1, 1 << 20);
    if (t.b < t.a) throw ConfigError(key + ": high must not be below low", lineOf(r));
  };
  if (node.IsScalar()) {
    t.kind = TokenCount::Kind::kFixed;
    t.a = integer(node, where, 1, 1 << 20);
  } else if (node.IsSequence()) {
    range(node, where);
  } else if (node.IsMap()) {
    bool has_form = false;
    forEachKey(
        node, where, [&](const std::string& key, const YAML::Node& v, const std::string& full) {
          if (key == "uniform") {
            range(v, full);
            has_form = true;
          } else if (key == "fixed") {
            t.kind = TokenCount::Kind::kFixed;
            t.a = integer(v, full, 1, 1 << 20);
            has_form = true;
          } else if (key == "lognormal") {
            t.kind = TokenCount::Kind::kLognormal;
            bool median = false;
            readFields(
                v, full,
                {
                    {"median",
                     [&](const auto& x, const auto& f) {
                       t.a = number(x, f, 1, 1 << 20);
                       median = true;
                     }},
                    {"sigma", [&](const auto& x, const auto& f) { t.b = number(x, f, 0, 10); }},
                });
            if (!median) throw ConfigError(full + ".median: required", lineOf(v));
            has_form = true;
          } else if (key == "min") {
            t.min = integer(v, full, 1, 1 << 20);
          } else if (key == "max") {
            t.max = integer(v, full, 1, 1 << 20);
          } else {
            return false;
          }
          return true;
        });
    if (!has_form) {
      throw ConfigError(where + ": needs one of fixed, uniform, lognormal", lineOf(node));
    }
  } else {
    throw ConfigError(where + ": must be a number, [low, high] or a mapping", lineOf(node));
  }
  if (t.max < t.min) throw ConfigError(where + ".max: must not be below min", lineOf(node));
  return t;
}

RequestClass parseClass(const YAML::Node& node, const std::string& where) {
  RequestClass c;
  bool prompt = false;
  bool output = false;
  forEachKey(node, where,
             [&](const std::string& key, const YAML::Node& v, const std::string& full) {
               if (key == "name") {
                 c.name = scalar<std::string>(v, full);
               } else if (key == "weight") {
                 c.weight = number(v, full, 0, 1e9);
               } else if (key == "prompt_tokens" || key == "prompt_words") {
                 if (prompt) throw ConfigError(full + ": prompt given twice", lineOf(v));
                 c.prompt = parseTokenCount(v, full, key == "prompt_words");
                 prompt = true;
               } else if (key == "output_tokens") {
                 c.output = parseTokenCount(v, full, false);
                 output = true;
               } else if (key == "deadline_s") {
                 c.deadline = seconds(v, full, 0.001, 86400);
               } else {
                 return false;
               }
               return true;
             });
  if (!prompt) throw ConfigError(where + ".prompt_tokens: required", lineOf(node));
  if (!output) throw ConfigError(where + ".output_tokens: required", lineOf(node));
  return c;
}

void parseArrivals(const YAML::Node& node, const std::string& where, ArrivalSpec& a) {
  if (!node.IsMap() || node.size() != 1) {
    throw ConfigError(where + ": must be one of poisson, diurnal, closed_loop, trace",
                      lineOf(node));
  }
  const auto it = node.begin();
  const std::string kind = scalar<std::string>(it->first, where);
  const std::string full = where + "." + kind;
  const YAML::Node v = it->second;
  auto rateOrLoad = [&](const std::string& key, const YAML::Node& x, const std::string& f) {
    if (key == "rate") {
      a.rate = number(x, f, 1e-9, 1e9);
    } else if (key == "load") {
      a.load = number(x, f, 1e-6, 100);
    } else {
      return false;
    }
    return true;
  };
  if (kind == "poisson") {
    a.kind = ArrivalSpec::Kind::kPoisson;
    forEachKey(v, full, rateOrLoad);
  } else if (kind == "diurnal") {
    a.kind = ArrivalSpec::Kind::kDiurnal;
    forEachKey(v, full, [&](const std::string& key, const YAML::Node& x, const std::string& f) {
      if (rateOrLoad(key, x, f)) return true;
      if (key == "period_s") {
        a.period = seconds(x, f, 1);
      } else if (key == "curve") {
        if (!x.IsSequence() || x.size() < 1) {
          throw ConfigError(f + ": must be a list of [seconds, multiplier]", lineOf(x));
        }
        for (size_t i = 0; i < x.size(); ++i) {
          const std::string p = fmt::format("{}[{}]", f, i);
          if (!x[i].IsSequence() || x[i].size() != 2) {
            throw ConfigError(p + ": must be [seconds, multiplier]", lineOf(x[i]));
          }
          const double t = number(x[i][0], p + "[0]", 0, kMaxSeconds);
          if (!a.curve.empty() && t <= a.curve.back().first) {
            throw ConfigError(p + ": times must increase", lineOf(x[i]));
          }
          a.curve.emplace_back(t, number(x[i][1], p + "[1]", 0, 1e6));
        }
      } else {
        return false;
      }
      return true;
    });
    if (a.curve.empty()) throw ConfigError(full + ".curve: required", lineOf(v));
  } else if (kind == "closed_loop") {
    a.kind = ArrivalSpec::Kind::kClosedLoop;
    readFields(
        v, full,
        {
            {"clients", [&](const auto& x, const auto& f) { a.clients = integer(x, f, 1, 1e7); }},
            {"ramp_s", [&](const auto& x, const auto& f) { a.ramp = seconds(x, f, 0, 86400); }},
        });
    if (a.clients == 0) throw ConfigError(full + ".clients: required", lineOf(v));
  } else if (kind == "trace") {
    a.kind = ArrivalSpec::Kind::kTrace;
    a.trace_path = scalar<std::string>(v, full);  // resolved by parseRoot
    if (a.trace_path.empty()) throw ConfigError(full + ": must name a file", lineOf(v));
  } else {
    throw ConfigError(full + ": unknown arrival process (poisson, diurnal, closed_loop, trace)",
                      lineOf(it->first));
  }
  if ((kind == "poisson" || kind == "diurnal") && (a.rate > 0) == (a.load > 0)) {
    throw ConfigError(full + ": give exactly one of rate, load", lineOf(v));
  }
}

void parseWorkload(const YAML::Node& node, WorkloadSpec& w) {
  bool arrivals = false;
  forEachKey(
      node, "workload", [&](const std::string& key, const YAML::Node& v, const std::string& full) {
        if (key == "arrivals") {
          parseArrivals(v, full, w.arrivals);
          arrivals = true;
        } else if (key == "mix") {
          if (!v.IsSequence() || v.size() == 0) {
            throw ConfigError(full + ": must be a non-empty list", lineOf(v));
          }
          double weight = 0;
          for (size_t i = 0; i < v.size(); ++i) {
            w.mix.push_back(parseClass(v[i], fmt::format("{}[{}]", full, i)));
            if (w.mix.back().name.empty()) w.mix.back().name = fmt::format("class{}", i);
            weight += w.mix.back().weight;
          }
          if (!(weight > 0)) throw ConfigError(full + ": the weights sum to 0", lineOf(v));
        } else if (key == "bursts") {
          if (!v.IsSequence()) throw ConfigError(full + ": must be a list", lineOf(v));
          for (size_t i = 0; i < v.size(); ++i) {
            const std::string where = fmt::format("{}[{}]", full, i);
            Burst b;
            bool count = false;
            readFields(v[i], where,
                       {
                           {"at_s", [&](const auto& x, const auto& f) { b.at = seconds(x, f); }},
                           {"count",
                            [&](const auto& x, const auto& f) {
                              b.count = integer(x, f, 1, 1e9);
                              count = true;
                            }},
                           {"duration_s",
                            [&](const auto& x, const auto& f) { b.duration = seconds(x, f); }},
                           {"client",
                            [&](const auto& x, const auto& f) { b.client = integer(x, f, 0, 1e9); }},
                       });
            if (!count) throw ConfigError(where + ".count: required", lineOf(v[i]));
            w.bursts.push_back(b);
          }
        } else if (key == "sessions") {
          w.sessions = integer(v, full, 0, 1e9);
        } else if (key == "clients") {
          w.clients = integer(v, full, 0, 1e9);
        } else {
          return false;
        }
        return true;
      });
  // Bursts alone need no arrival process (a rate of 0).
  if (!arrivals && w.bursts.empty()) {
    throw ConfigError("workload.arrivals: required (or bursts)", lineOf(node));
  }
  if (w.mix.empty() && w.arrivals.kind != ArrivalSpec::Kind::kTrace) {
    throw ConfigError("workload.mix: required (except with a trace)", lineOf(node));
  }
}

FleetGroup parseGroup(const YAML::Node& node, const std::string& where,
                      const engine::EngineTuning& base) {
  FleetGroup g;
  g.tuning = base;
  forEachKey(node, where,
             [&](const std::string& key, const YAML::Node& v, const std::string& full) {
               if (key == "gpu") {
                 g.gpu = scalar<std::string>(v, full);
               } else if (key == "count") {
                 g.count = integer(v, full, 0, 1e6);
               } else if (key == "tp") {
                 g.tp = integer(v, full, 1, 64);
               } else if (key == "prefix_caching") {
                 g.prefix_caching = scalar<bool>(v, full);
               } else if (key == "startup_s") {
                 g.startup = seconds(v, full, 0, 3600);
               } else if (key == "engine") {
                 try {
                   engine::parseEngineTuning(v, g.tuning);
                 } catch (const std::invalid_argument& e) {
                   throw ConfigError(full + ": " + e.what(), lineOf(v));
                 }
               } else {
                 return false;
               }
               return true;
             });
  if (g.gpu.empty()) throw ConfigError(where + ".gpu: required", lineOf(node));
  return g;
}

void parseScaleDown(const YAML::Node& node, const std::string& where, ScaleDownSpec& out) {
  auto choice = [](const YAML::Node& v, const std::string& full, const char* a, const char* b) {
    const std::string text = scalar<std::string>(v, full);
    if (text != a && text != b) {
      throw ConfigError(fmt::format("{}: must be {} or {}", full, a, b), lineOf(v));
    }
    return text == a;
  };
  readFields(node, where,
             {
                 {"victims",
                  [&](const auto& x, const auto& f) {
                    out.victims = choice(x, f, "newest", "cheapest")
                                      ? ScaleDownSpec::Victims::kNewest
                                      : ScaleDownSpec::Victims::kCheapest;
                  }},
                 {"stop",
                  [&](const auto& x, const auto& f) {
                    out.stop = choice(x, f, "drain", "kill") ? ScaleDownSpec::Stop::kDrain
                                                             : ScaleDownSpec::Stop::kKill;
                  }},
             });
}

void parseRouting(const YAML::Node& node, const std::string& where, GatewaySpec& g) {
  forEachKey(
      node, where, [&](const std::string& key, const YAML::Node& v, const std::string& full) {
        if (key == "load_balance") {
          fleet::parseLoadBalance(v, full, g.load_balance);
        } else if (key == "least_request_top_k") {
          fleet::parseTopK(v, full, g.top_k);
        } else if (key == "slow_start") {
          fleet::parseSlowStart(v, full, g.slow_start);
        } else if (key == "candidate_sample") {
          g.candidate_sample = fleet::parseCandidateSample(v, full);
        } else if (key == "auto_blend_load_balance_weight") {
          g.auto_blend_load_balance_weight = number(v, full, 0, 1e6);
        } else if (key == "capacity") {
          readFields(
              v, full,
              {
                  {"refresh_ms",
                   [&](const auto& x, const auto& f) { g.capacity_refresh = millis(x, f); }},
                  {"window_ms",
                   [&](const auto& x, const auto& f) { g.capacity_window = millis(x, f); }},
                  {"time_constant_ms",
                   [&](const auto& x, const auto& f) { g.capacity_time_constant = millis(x, f); }},
              });
        } else {
          return false;
        }
        return true;
      });
}

void parseGateways(const YAML::Node& node, GatewaySpec& g) {
  bool shared_given = false;
  forEachKey(node, "gateways",
             [&](const std::string& key, const YAML::Node& v, const std::string& full) {
               if (key == "count") {
                 g.count = integer(v, full, 1, 1000);
               } else if (key == "shared_state") {
                 g.shared_state = scalar<bool>(v, full);
                 shared_given = true;
               } else if (key == "sync_interval_ms") {
                 g.sync_interval = milliseconds(v, full, 1, 3.6e6);
               } else if (key == "sync_delay_ms") {
                 g.sync_delay = milliseconds(v, full, 0, 3.6e6);
               } else if (key == "liveness_ttl_ms") {
                 g.liveness_ttl = milliseconds(v, full, 1, 3.6e6);
               } else if (key == "scrape_interval_ms") {
                 g.scrape_interval = milliseconds(v, full, 1, 3.6e6);
               } else if (key == "telemetry") {
                 fleet::parseScrapePolicy(v, full, g.scrape_interval, g.scrape_policy);
               } else if (key == "telemetry_sharing") {
                 g.telemetry_sharing = scalar<bool>(v, full);
               } else if (key == "inflight_slots_ahead") {
                 g.inflight_slots_ahead = integer(v, full, 0, 1 << 20);
               } else if (key == "network_latency_ms") {
                 g.network_latency = milliseconds(v, full, 0, 60000);
               } else if (key == "session_affinity") {
                 g.session_affinity = scalar<bool>(v, full);
               } else if (key == "scale_down") {
                 parseScaleDown(v, full, g.scale_down);
               } else if (key == "routing") {
                 parseRouting(v, full, g);
               } else if (key == "limits") {
                 readFields(v, full,
                            {
                                {"requests_per_second_per_replica",
                                 [&](const auto& x, const auto& f) {
                                   g.limits.requests_per_second_per_replica = number(x, f, 0, 1e9);
                                 }},
                                {"max_inflight_per_replica",
                                 [&](const auto& x, const auto& f) {
                                   g.limits.max_inflight_per_replica = integer(x, f, 0, 1e9);
                                 }},
                            });
               } else if (key == "admission") {
                 admission::parseAdmission(v, full, g.admission);
               } else if (key == "health") {
                 health::parseHealthSettings(v, full, g.health);
               } else if (key == "retry") {
                 readFields(v, full,
                            {
                                {"max_attempts",
                                 [&](const auto& x, const auto& f) {
                                   g.retry_max_attempts = integer(x, f, 1, 10);
                                 }},
                                {"budget_ratio",
                                 [&](const auto& x, const auto& f) {
                                   g.retry_budget_ratio = number(x, f, 0, 10);
                                 }},
                                {"budget_min_per_second",
                                 [&](const auto& x, const auto& f) {
                                   g.retry_budget_min_per_second = number(x, f, 0, 1e6);
                                 }},
                            });
               } else {
                 return false;
               }
               return true;
             });
  if (!shared_given) g.shared_state = g.count > 1;
  if (g.liveness_ttl < 2 * g.sync_interval) {
    throw ConfigError("gateways.liveness_ttl_ms: must be at least twice sync_interval_ms",
                      lineOf(node));
  }
}

ScenarioEvent parseEvent(const YAML::Node& node, const std::string& where) {
  ScenarioEvent e;
  e.line = lineOf(node);
  bool at = false;
  bool what = false;
  auto once = [&](const YAML::Node& v, const std::string& full) {
    if (what) throw ConfigError(full + ": one event per entry", lineOf(v));
    what = true;
  };
  forEachKey(
      node, where, [&](const std::string& key, const YAML::Node& v, const std::string& full) {
        if (key == "at_s") {
          e.at = seconds(v, full);
          at = true;
          return true;
        }
        if (key == "add_replicas" || key == "remove_replicas") {
          once(v, full);
          e.kind = key == "add_replicas" ? ScenarioEvent::Kind::kAddReplicas
                                         : ScenarioEvent::Kind::kRemoveReplicas;
          readFields(
              v, full,
              {
                  {"gpu", [&](const auto& x, const auto& f) { e.gpu = scalar<std::string>(x, f); }},
                  {"count", [&](const auto& x, const auto& f) { e.count = integer(x, f, 1, 1e6); }},
              });
          if (e.gpu.empty() || e.count == 0) {
            throw ConfigError(full + ": needs gpu and count", lineOf(v));
          }
        } else if (key == "fail_replica" || key == "recover_replica") {
          once(v, full);
          e.kind = key == "fail_replica" ? ScenarioEvent::Kind::kFailReplica
                                         : ScenarioEvent::Kind::kRecoverReplica;
          e.replica = integer(v, full, 0, 1e7);
        } else if (key == "slow_replica") {
          once(v, full);
          e.kind = ScenarioEvent::Kind::kSlowReplica;
          readFields(v, full,
                     {
                         {"replica",
                          [&](const auto& x, const auto& f) { e.replica = integer(x, f, 0, 1e7); }},
                         {"factor", [&](const auto& x,
                                        const auto& f) { e.factor = number(x, f, 0.01, 1000); }},
                     });
          if (e.replica < 0) throw ConfigError(full + ".replica: required", lineOf(v));
        } else if (key == "kill_gateway") {
          once(v, full);
          e.kind = ScenarioEvent::Kind::kKillGateway;
          e.gateway = integer(v, full, 0, 999);
        } else if (key == "redis_outage") {
          once(v, full);
          e.kind = ScenarioEvent::Kind::kRedisOutage;
          readFields(v, full,
                     {
                         {"duration_s",
                          [&](const auto& x, const auto& f) { e.duration = seconds(x, f, 0.001); }},
                     });
          if (e.duration == 0) throw ConfigError(full + ".duration_s: required", lineOf(v));
        } else {
          return false;
        }
        return true;
      });
  if (!at) throw ConfigError(where + ".at_s: required", lineOf(node));
  if (!what) {
    throw ConfigError(where +
                          ": needs one of add_replicas, remove_replicas, fail_replica, "
                          "recover_replica, slow_replica, kill_gateway, redis_outage",
                      lineOf(node));
  }
  return e;
}

void parseRecord(const YAML::Node& node, RecordSpec& r) {
  forEachKey(
      node, "record", [&](const std::string& key, const YAML::Node& v, const std::string& full) {
        if (key == "per_request_csv") {
          r.per_request_csv = scalar<bool>(v, full);
        } else if (key == "per_second_csv") {
          r.per_second_csv = scalar<bool>(v, full);
        } else if (key == "plots") {
          r.plots = scalar<bool>(v, full);
        } else if (key == "slo") {
          readFields(
              v, full,
              {
                  {"ttft_ms",
                   [&](const auto& x, const auto& f) { r.slo.ttft_ms = number(x, f, 0, 1e9); }},
                  {"tpot_ms",
                   [&](const auto& x, const auto& f) { r.slo.tpot_ms = number(x, f, 0, 1e9); }},
                  {"e2e_ms",
                   [&](const auto& x, const auto& f) { r.slo.e2e_ms = number(x, f, 0, 1e9); }},
              });
        } else {
          return false;
        }
        return true;
      });
}

// `strategies:` entries: a strategy name (or blend), or {strategy, label, routing, admission} for
// a run with its own routing knobs or admission over the gateways' (e.g. a candidate sample size,
// a queue mode).
void parseStrategies(const YAML::Node& v, Scenario& s) {
  std::set<std::string> labels;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string where = fmt::format("strategies[{}]", i);
    StrategyRun run;
    run.gateways = s.gateways;
    // reset(), not =: assigning a YAML::Node writes through to the node it refers to.
    YAML::Node strategy_node;
    if (!v[i].IsMap()) {
      strategy_node.reset(v[i]);
    } else {
      forEachKey(v[i], where,
                 [&](const std::string& key, const YAML::Node& x, const std::string& full) {
                   if (key == "strategy") {
                     strategy_node.reset(x);
                   } else if (key == "label") {
                     run.label = scalar<std::string>(x, full);
                   } else if (key == "routing") {
                     parseRouting(x, full, run.gateways);
                   } else if (key == "admission") {
                     admission::parseAdmission(x, full, run.gateways.admission);
                   } else if (key == "scale_down") {
                     parseScaleDown(x, full, run.gateways.scale_down);
                   } else if (key == "autoscale") {
                     run.autoscale = scalar<bool>(x, full);
                     if (run.autoscale && !s.autoscale.given) {
                       throw ConfigError(full + ": needs the scenario's autoscale:", lineOf(x));
                     }
                   } else {
                     return false;
                   }
                   return true;
                 });
      if (strategy_node.IsNull()) {
        throw ConfigError(where + ".strategy: required", lineOf(v[i]));
      }
    }
    run.strategy = scalar<std::string>(strategy_node, where);
    routing::StrategySpec spec;
    std::string_view bad;
    if (routing::parseStrategySpec(run.strategy, spec, &bad) != routing::SpecError::kNone) {
      std::string known;
      for (std::string_view n : routing::strategyNames()) {
        known += (known.empty() ? "" : ", ") + std::string(n);
      }
      throw ConfigError(fmt::format("{}: invalid routing strategy '{}' at '{}' (known: {})", where,
                                    run.strategy, bad, known),
                        lineOf(strategy_node));
    }
    if (run.label.empty()) run.label = run.strategy;
    if (!labels.insert(run.label).second) {
      throw ConfigError(where + ": '" + run.label + "' listed twice (give a label)", lineOf(v[i]));
    }
    s.strategies.push_back(std::move(run));
  }
}

// Checks that need the whole scenario: names against the profiles, indices against the fleet.
void validate(Scenario& s, const YAML::Node& root) {
  if (s.fleet.empty()) throw ConfigError("fleet: required (at least one group)", lineOf(root));
  if (s.strategies.empty()) throw ConfigError("strategies: required", lineOf(root));
  engine::ProfileCatalog catalog;
  try {
    catalog = s.profiles_path.empty() ? engine::builtinProfiles()
                                      : engine::loadProfilesFile(s.profiles_path);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("profiles: ") + e.what(), lineOf(root["profiles"]));
  }
  if (!catalog.findModel(s.model)) {
    throw ConfigError(
        fmt::format("model: unknown profile '{}' (known: {})", s.model, catalog.modelNames()),
        lineOf(root["model"]));
  }
  int replicas = 0;
  for (size_t i = 0; i < s.fleet.size(); ++i) {
    const FleetGroup& g = s.fleet[i];
    const YAML::Node node = root["fleet"][i];
    if (!catalog.findGpu(g.gpu)) {
      throw ConfigError(
          fmt::format("fleet[{}].gpu: unknown GPU '{}' (known: {})", i, g.gpu, catalog.gpuNames()),
          lineOf(node["gpu"]));
    }
    engine::ProfileCatalog tuned = catalog;
    tuned.tuning = g.tuning;
    try {
      engine::makePerfConfig(tuned, g.gpu, s.model, g.tp);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("fleet[{}]: {}", i, e.what()), lineOf(node));
    }
    replicas += g.count;
  }
  if (replicas == 0) throw ConfigError("fleet: no replicas", lineOf(root["fleet"]));
  int added = 0;
  for (size_t i = 0; i < s.events.size(); ++i) {
    const ScenarioEvent& e = s.events[i];
    const std::string where = fmt::format("events[{}]", i);
    if (!e.gpu.empty() && !std::any_of(s.fleet.begin(), s.fleet.end(), [&](const auto& g) {
          return catalog.findGpu(g.gpu) == catalog.findGpu(e.gpu);
        })) {
      throw ConfigError(where + ": gpu '" + e.gpu + "' is not a fleet group's", e.line);
    }
    if (e.kind == ScenarioEvent::Kind::kAddReplicas) added += e.count;
    if (e.replica >= replicas + added) {
      throw ConfigError(fmt::format("{}: replica {} does not exist (the fleet has {} at that "
                                    "point, numbered from 0)",
                                    where, e.replica, replicas + added),
                        e.line);
    }
    if (e.gateway >= s.gateways.count) {
      throw ConfigError(fmt::format("{}: gateway {} does not exist ({} gateways, numbered from 0)",
                                    where, e.gateway, s.gateways.count),
                        e.line);
    }
  }
  for (size_t i = 0; i < s.autoscale.deployments.size(); ++i) {
    const AutoscaleDeployment& d = s.autoscale.deployments[i];
    const std::string where = fmt::format("autoscale.deployments[{}]", i);
    if (!std::any_of(s.fleet.begin(), s.fleet.end(), [&](const auto& g) {
          return catalog.findGpu(g.gpu) == catalog.findGpu(d.gpu);
        })) {
      throw ConfigError(where + ".gpu: '" + d.gpu + "' is not a fleet group's", d.line);
    }
    if (!s.prices.contains(catalog.findGpu(d.gpu)->name) && !s.prices.contains(d.gpu)) {
      throw ConfigError(where + ".gpu: '" + d.gpu + "' has no price (prices:)", d.line);
    }
  }
  if (s.warmup >= s.duration) {
    throw ConfigError("warmup_s: must be shorter than duration_s", lineOf(root["warmup_s"]));
  }
}

Scenario parseRoot(const YAML::Node& root, const std::string& base_dir) {
  Scenario s;
  YAML::Node strategy_nodes;
  if (!root || root.IsNull()) throw ConfigError("empty scenario", 1);
  if (!root.IsMap()) throw ConfigError("the top level must be a mapping", lineOf(root));
  engine::EngineTuning tuning = engine::builtinProfiles().tuning;
  // The engine: and profiles: keys apply to every fleet group: read them first.
  if (const YAML::Node p = root["profiles"]) {
    s.profiles_path = resolve(base_dir, scalar<std::string>(p, "profiles"));
  }
  if (!s.profiles_path.empty()) {
    try {
      tuning = engine::loadProfilesFile(s.profiles_path).tuning;
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("profiles: ") + e.what(), lineOf(root["profiles"]));
    }
  }
  if (const YAML::Node e = root["engine"]) {
    try {
      engine::parseEngineTuning(e, tuning);
    } catch (const std::invalid_argument& error) {
      throw ConfigError(std::string(error.what()), lineOf(e));
    }
  }
  forEachKey(root, "", [&](const std::string& key, const YAML::Node& v, const std::string& full) {
    if (key == "name") {
      s.name = scalar<std::string>(v, full);
    } else if (key == "seed") {
      s.seed = static_cast<uint64_t>(number(v, full, 0, 9e15));
    } else if (key == "duration_s") {
      s.duration = seconds(v, full, 0.001);
    } else if (key == "warmup_s") {
      s.warmup = seconds(v, full);
    } else if (key == "drain_s") {
      s.drain = seconds(v, full);
    } else if (key == "model") {
      s.model = scalar<std::string>(v, full);
    } else if (key == "profiles" || key == "engine") {
      // read above
    } else if (key == "fleet") {
      if (!v.IsSequence()) throw ConfigError("fleet: must be a list of groups", lineOf(v));
      for (size_t i = 0; i < v.size(); ++i) {
        s.fleet.push_back(parseGroup(v[i], fmt::format("fleet[{}]", i), tuning));
      }
    } else if (key == "gateways") {
      parseGateways(v, s.gateways);
    } else if (key == "strategies") {
      if (!v.IsSequence() || v.size() == 0) {
        throw ConfigError("strategies: must be a non-empty list", lineOf(v));
      }
      strategy_nodes.reset(v);  // read last: a run's knobs start from the gateways' ones
    } else if (key == "workload") {
      parseWorkload(v, s.workload);
    } else if (key == "events") {
      if (!v.IsSequence()) throw ConfigError("events: must be a list", lineOf(v));
      for (size_t i = 0; i < v.size(); ++i) {
        s.events.push_back(parseEvent(v[i], fmt::format("events[{}]", i)));
      }
      std::stable_sort(s.events.begin(), s.events.end(),
                       [](const auto& a, const auto& b) { return a.at < b.at; });
    } else if (key == "record") {
      parseRecord(v, s.record);
    } else if (key == "autoscale") {
      parseAutoscale(v, s.autoscale);
    } else if (key == "prices") {
      s.prices = parsePrices(v, base_dir);
    } else if (key == "capacity_probe") {
      readFields(
          v, full,
          {
              {"clients", [&](const auto& x,
                              const auto& f) { s.capacity_clients = integer(x, f, 1, 100000); }},
              {"seconds",
               [&](const auto& x, const auto& f) { s.capacity_seconds = number(x, f, 0.1, 3600); }},
          });
    } else {
      return false;
    }
    return true;
  });
  if (!root["workload"]) throw ConfigError("workload: required", lineOf(root));
  if (strategy_nodes) parseStrategies(strategy_nodes, s);
  s.workload.arrivals.trace_path = resolve(base_dir, s.workload.arrivals.trace_path);
  validate(s, root);
  return s;
}

}  // namespace

namespace {

// The standard normal's quantile function (P. J. Acklam's rational approximation, relative error
// below 1.2e-9), for the mean of a clamped lognormal.
double normalQuantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - kLow) return -normalQuantile(1 - p);
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

}  // namespace

int TokenCount::draw(Rng& rng) const {
  double v = a;
  switch (kind) {
    case Kind::kFixed:
      break;
    case Kind::kUniform:
      v = a + static_cast<double>(rng.below(static_cast<uint32_t>(b - a + 1)));
      break;
    case Kind::kLognormal: {
      // Box-Muller from two uniforms (one normal per draw: the sequence stays simple).
      const double u1 = 1.0 - rng.uniform01();
      const double u2 = rng.uniform01();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
      v = std::round(a * std::exp(b * z));
      break;
    }
  }
  const int n = static_cast<int>(std::clamp(v, static_cast<double>(min), static_cast<double>(max)));
  return words ? promptTokensOfWords(n) : n;
}

double TokenCount::mean() const {
  // Numerically over the clamped distribution: exact for fixed and uniform, a fine grid of
  // quantiles for the lognormal.
  auto tokens = [&](double v) {
    const double n = std::clamp(std::round(v), static_cast<double>(min), static_cast<double>(max));
    return words ? static_cast<double>(promptTokensOfWords(static_cast<int>(n))) : n;
  };
  switch (kind) {
    case Kind::kFixed:
      return tokens(a);
    case Kind::kUniform: {
      double sum = 0;
      for (double v = a; v <= b; v += 1) sum += tokens(v);
      return sum / (b - a + 1);
    }
    case Kind::kLognormal: {
      // The mean over a fine grid of the normal's quantiles (the clamp and the rounding have no
      // closed form together).
      constexpr int kSteps = 20000;
      double sum = 0;
      for (int i = 0; i < kSteps; ++i) {
        sum += tokens(a * std::exp(b * normalQuantile((i + 0.5) / kSteps)));
      }
      return sum / kSteps;
    }
  }
  return a;
}

int promptTokensOfWords(int words) {
  const double chars = std::max(1.0, words * kCharsPerPromptWord - 1);
  return std::max(1, static_cast<int>(std::ceil(chars / 4)));
}

int Scenario::replicaCount() const {
  int n = 0;
  for (const FleetGroup& g : fleet) n += g.count;
  return n;
}

Scenario scenarioFor(const Scenario& scenario, const StrategyRun& run) {
  Scenario out = scenario;
  out.gateways = run.gateways;
  out.strategies = {run};
  return out;
}

Scenario parseScenario(const std::string& yaml_text, const std::string& name,
                       const std::string& base_dir) {
  try {
    Scenario s = parseRoot(YAML::Load(yaml_text), base_dir);
    if (s.name.empty()) s.name = std::filesystem::path(name).stem().string();
    return s;
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}: invalid YAML: {}", name, e.mark.line + 1, e.msg),
                      e.mark.line + 1);
  } catch (const ConfigError& e) {
    throw ConfigError(e.line > 0 ? fmt::format("{}:{}: {}", name, e.line, e.what())
                                 : fmt::format("{}: {}", name, e.what()),
                      e.line);
  }
}

Scenario loadScenarioFile(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw ConfigError("scenario file: " + error);
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  Scenario s = parseScenario(*text, path, folder.empty() ? "." : folder.string());
  s.path = path;
  return s;
}

}  // namespace switchyard::sim
