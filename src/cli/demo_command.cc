#include "cli/demo_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "core/child_process.h"
#include "core/text_file.h"
#include "loadgen/load_generator.h"
#include "profile/profile_json.h"

namespace switchyard::cli {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kHost = "127.0.0.1";

std::string selfPath() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("switchyard") : path.string();
}

std::string tempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("switchyard-demo-{}-{}", ::getpid(), name))
      .string();
}

// Starts `switchyard ARGS…` and waits for its `listening` line; nullptr if it did not come.
// A gateway with SLO routing computes its emulated profiles first: allow it `timeout`.
std::unique_ptr<ChildProcess> start(const std::string& self, std::vector<std::string> args,
                                    std::vector<uint16_t>& ports,
                                    std::chrono::seconds timeout = 10s) {
  args.insert(args.begin(), self);
  auto child = std::make_unique<ChildProcess>(std::move(args));
  ports = child->waitForListening(deadlineIn(timeout));
  return child;
}

std::vector<std::string> distinct(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// Engine counters at one instant, per replica port.
struct EngineSample {
  double busy_seconds = std::nan("");
  double generation_tokens = std::nan("");
  double kv_usage = std::nan("");  // fraction of the KV cache in use, now
};

EngineSample sampleEngine(uint16_t port) {
  EngineSample s;
  if (auto text = loadgen::httpGet(kHost, port, "/metrics")) {
    s.busy_seconds = loadgen::metricSum(*text, "switchyard_engine_busy_seconds_total").value_or(NAN);
    s.generation_tokens = loadgen::metricSum(*text, "vllm:generation_tokens_total").value_or(NAN);
    s.kv_usage = loadgen::metricSum(*text, "vllm:gpu_cache_usage_perc").value_or(NAN);
  }
  return s;
}

// The load generator on its own thread while this one samples engines at fixed instants.
class BackgroundLoad {
 public:
  explicit BackgroundLoad(loadgen::LoadSpec spec)
      : spec_(std::move(spec)), started_(Clock::now()),
        thread_([this] { report_ = loadgen::runLoad(spec_); }) {}
  ~BackgroundLoad() {
    if (thread_.joinable()) thread_.join();
  }
  void sleepUntil(double seconds) {
    std::this_thread::sleep_until(started_ + std::chrono::duration<double>(seconds));
  }
  loadgen::LoadReport finish() {
    thread_.join();
    return std::move(report_);
  }

 private:
  loadgen::LoadSpec spec_;
  Clock::time_point started_;
  loadgen::LoadReport report_;
  std::thread thread_;
};

double meanOutputTokens(const std::vector<loadgen::RequestClass>& mix) {
  double weight = 0, tokens = 0;
  for (const auto& c : mix) {
    weight += c.weight;
    tokens += c.weight * (c.max_tokens_min + c.max_tokens_max) / 2.0;
  }
  return weight > 0 ? tokens / weight : 1;
}

// One replica of `gpu` alone, saturated: output tokens/s and busy fraction over the window.
struct Capacity {
  double tokens_per_s = 0;
  double busy = 0;
};

std::optional<Capacity> measureCapacity(const std::string& self, const DemoOptions& o,
                                        const std::string& gpu,
                                        const std::vector<loadgen::RequestClass>& mix) {
  std::vector<uint16_t> ports;
  auto engine = start(self,
                      {"engine", "--gpu", gpu, "--model", o.model, "--listen", "127.0.0.1:0",
                       "--no-prefix-caching", "--seed", "1"},
                      ports);
  if (ports.size() != 1) return std::nullopt;
  // A burst of 64 prompts at once takes seconds of prefill on a slow GPU and then keeps the
  // clients in lock-step: start them over 2 s and measure from 3 s on.
  constexpr double kRamp = 3.0;
  loadgen::LoadSpec spec;
  spec.port = ports[0];
  spec.model = o.model;
  spec.rate = 0;
  spec.concurrency = o.capacity_concurrency;
  spec.ramp = 2 * kNsPerSec;
  // Bodies are built up front: enough for 150 requests/s, more than any emulated GPU completes.
  spec.requests = o.capacity_concurrency + static_cast<int>(150 * (kRamp + o.capacity_seconds));
  spec.mix = mix;
  spec.seed = o.seed + 1000;
  spec.deadline = static_cast<TimeNs>((kRamp + o.capacity_seconds + 0.2) * kNsPerSec);
  BackgroundLoad load(spec);
  load.sleepUntil(kRamp);
  const EngineSample a = sampleEngine(ports[0]);
  const auto t0 = Clock::now();
  load.sleepUntil(kRamp + o.capacity_seconds);
  const EngineSample b = sampleEngine(ports[0]);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  load.finish();
  Capacity c;
  c.tokens_per_s = (b.generation_tokens - a.generation_tokens) / wall;
  c.busy = (b.busy_seconds - a.busy_seconds) / wall;
  if (!(c.tokens_per_s > 0)) return std::nullopt;
  return c;
}

// One field of what the gateway learned about replica `name` ("decode", "slowdown"), from
// /debug/fleet; NaN if unknown.
double learnedValue(const std::string& fleet_json, const std::string& name,
                    std::string_view field) {
  const size_t at = fleet_json.find(fmt::format(R"("name":"{}")", name));
  if (at == std::string::npos) return NAN;
  const size_t capacity = fleet_json.find(R"("capacity":{)", at);
  if (capacity == std::string::npos) return NAN;
  const std::string key = fmt::format(R"("{}":)", field);
  const size_t cap = fleet_json.find(key, capacity);
  if (cap == std::string::npos) return NAN;
  const char* begin = fleet_json.c_str() + cap + key.size();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  return end == begin ? NAN : value;
}

// What one strategy did to one GPU type (or to the whole fleet: gpu "all").
struct TypeResult {
  std::string gpu;
  loadgen::GroupStats stats;
  double busy = 0;            // mean busy fraction of the type's replicas
  double kv_usage = 0;        // mean KV-cache usage of the type's replicas over the window
  double tokens_per_s = 0;    // output tokens/s served by the type (engine counters)
  double throughput_util = 0; // per-replica tokens/s ÷ the type's measured capacity
  double learned_capacity = NAN;  // mean of the gateway's estimates for the type's replicas
  double learned_knee = NAN;      // mean of 1 / learned slowdown: streams where t(n) = 2·t(0)
};

struct StrategyResult {
  std::string strategy;
  double load = 0;
  double rate = 0;
  std::vector<TypeResult> types;  // one per GPU type, then "all"
  int failed = 0;
  int refused = 0;          // of those, answered 429 by the gateway
  double queue_peak = 0;    // the gateway's largest queue depth sampled in the window
};

// "key:value,key:value" as pairs; nullopt when a part has no ':' or an empty side.
std::optional<std::vector<std::pair<std::string, std::string>>> keyValuePairs(
    const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t at = 0;
  while (at < spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    const std::string part = spec.substr(at, end - at);
    const size_t colon = part.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == part.size()) return std::nullopt;
    pairs.emplace_back(part.substr(0, colon), part.substr(colon + 1));
    at = end + 1;
  }
  return pairs;
}

// `--gpu-costs` as a YAML flow map ("{ A10: 1.006, L20: 1.861 }"), each type among `types`;
// nullopt when malformed.
std::optional<std::string> gpuCostsMap(const std::string& spec,
                                       const std::vector<std::string>& types) {
  const auto pairs = keyValuePairs(spec);
  if (!pairs) return std::nullopt;
  std::string map;
  for (const auto& [gpu, value] : *pairs) {
    char* stop = nullptr;
    const double price = std::strtod(value.c_str(), &stop);
    const bool known_type = std::find(types.begin(), types.end(), gpu) != types.end();
    if (*stop != '\0' || !(price > 0) || !known_type) return std::nullopt;
    map += fmt::format("{}{}: {}", map.empty() ? "" : ", ", gpu, price);
  }
  return "{ " + map + " }";
}

// `--slo-profiles` as GPU type -> absolute path, each type among `types` and each file a profile
// SLO routing can use; nullopt (and `error`) otherwise.
std::optional<std::vector<std::pair<std::string, std::string>>> sloProfileFiles(
    const std::string& spec, const std::vector<std::string>& types, std::string* error) {
  auto pairs = keyValuePairs(spec);
  if (!pairs) {
    *error = "must be GPU:FILE,...";
    return std::nullopt;
  }
  for (auto& [gpu, file] : *pairs) {
    if (std::find(types.begin(), types.end(), gpu) == types.end()) {
      *error = gpu + " is not one of --gpus";
      return std::nullopt;
    }
    const auto text = readTextFile(file, error);
    if (!text) return std::nullopt;
    const profile::ProfileParse parsed = profile::parseProfileJson(*text);
    if (!parsed.profile || !parsed.profile->hasSteps()) {
      *error = file + ": " + (parsed.profile ? "no measured steps (regenerate it with "
                                               "switchyard gen-profile)"
                                             : parsed.error);
      return std::nullopt;
    }
    std::error_code ignored;
    file = std::filesystem::absolute(file, ignored).string();
  }
  return pairs;
}

// The model's `slo:` for the strategies that route by it: the goodput SLO, the profile files
// given or else emulated profiles, the GPU prices when given.
std::string sloBlock(const DemoOptions& o) {
  std::string objective = fmt::format("tpot={}ms", o.slo_tpot_ms);
  if (o.slo_ttft_ms > 0) objective += fmt::format(",ttft={}ms", o.slo_ttft_ms);
  const std::vector<std::string> types = distinct(o.gpus);
  std::string ignored;  // checked before the fleet started
  const auto files = o.slo_profiles.empty()
                         ? std::vector<std::pair<std::string, std::string>>{}
                         : sloProfileFiles(o.slo_profiles, types, &ignored)
                               .value_or(std::vector<std::pair<std::string, std::string>>{});
  std::string profiles;
  for (const std::string& gpu : types) {
    std::string source = "emulated";
    for (const auto& [type, file] : files) {
      if (type != gpu) continue;
      source = "\"";  // a double-quoted YAML scalar: any path reads back as written
      for (const char c : file) {
        if (c == '"' || c == '\\') source += '\\';
        source += c;
      }
      source += '"';
    }
    profiles += fmt::format("{}{}: {}", profiles.empty() ? "" : ", ", gpu, source);
  }
  const std::optional<std::string> costs =
      o.gpu_costs.empty() ? std::nullopt : gpuCostsMap(o.gpu_costs, distinct(o.gpus));
  return fmt::format("    slo: {{ objective: \"{}\", percentile: 99, profiles: {{ {} }}{} }}\n",
                     objective, profiles, costs ? ", costs: " + *costs : "");
}

// The mix with each class pinned to its GPU type as `--oracle` says; nullopt when malformed.
std::optional<std::vector<loadgen::RequestClass>> pinnedMix(
    std::vector<loadgen::RequestClass> mix, const std::string& oracle) {
  const auto pairs = keyValuePairs(oracle);
  if (!pairs) return std::nullopt;
  for (const auto& [name, gpu] : *pairs) {
    bool found = false;
    for (auto& c : mix) {
      if (c.name == name) {
        c.gpu = gpu;
        found = true;
      }
    }
    if (!found) return std::nullopt;
  }
  return mix;
}

std::optional<StrategyResult> runStrategy(const std::string& self, const DemoOptions& o,
                                          const std::string& strategy, double rate,
                                          const std::vector<loadgen::RequestClass>& mix,
                                          const std::map<std::string, Capacity>& capacity) {
  const std::string replicas_path = tempPath("replicas.yaml");
  {
    std::ofstream file(replicas_path);
    for (size_t i = 0; i < o.gpus.size(); ++i) {
      file << fmt::format("- {{gpu: {}, model: {}, seed: {}}}\n", o.gpus[i], o.model, i + 1);
    }
  }
  std::vector<uint16_t> ports;
  auto engines = start(self, {"engine", "--replicas", replicas_path, "--no-prefix-caching"}, ports);
  std::filesystem::remove(replicas_path);
  if (ports.size() != o.gpus.size()) {
    std::fprintf(stderr, "demo: the engines did not start\n");
    return std::nullopt;
  }
  std::map<std::string, std::string> gpu_of;
  std::string replicas;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string address = fmt::format("{}:{}", kHost, ports[i]);
    gpu_of[address] = o.gpus[i];
    replicas += fmt::format("      - address: {}\n        labels: {{ gpu: {}, engine: vllm }}\n",
                            address, o.gpus[i]);
  }
  const std::string config_path = tempPath("gateway.yaml");
  {
    // Capacity learning sped up for a run of seconds rather than minutes (defaults: refresh 1 s,
    // window 60 s, time constant 10 s).
    std::ofstream config(config_path);
    config << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\n"
              "routing:\n  default_strategy: least-request\n"
              "  capacity: { refresh_ms: 500, window_ms: 10000, time_constant_ms: 3000 }\n"
              "models:\n  - name: "
           << o.model << "\n"
           << (strategy.rfind("slo", 0) == 0
                   ? "    routing_strategy: " + strategy + "\n" + sloBlock(o)
                   : "")
           << "    replicas:\n"
           << replicas;
  }
  std::vector<uint16_t> gateway_ports;
  auto gateway = start(self, {"gateway", "--config", config_path}, gateway_ports, 120s);
  std::filesystem::remove(config_path);
  if (gateway_ports.size() != 2) {
    std::fprintf(stderr, "demo: the gateway did not start\n");
    return std::nullopt;
  }

  const double total_seconds = o.warmup_seconds + o.seconds;
  loadgen::LoadSpec spec;
  spec.port = gateway_ports[0];
  spec.model = o.model;
  const bool oracle = strategy == "oracle";
  spec.strategy = oracle ? "least-request" : strategy;
  spec.rate = rate;
  spec.requests = std::max(1, static_cast<int>(std::lround(rate * total_seconds)));
  spec.mix = mix;
  if (oracle) {
    auto pinned = pinnedMix(mix, o.oracle);
    if (!pinned) {
      std::fprintf(stderr, "demo: --oracle must name the mix's classes as class:GPU,...\n");
      return std::nullopt;
    }
    spec.mix = *pinned;
  }
  spec.seed = o.seed;
  spec.request_timeout = 60 * kNsPerSec;
  spec.deadline = static_cast<TimeNs>((total_seconds + 60) * kNsPerSec);
  StrategyResult result;
  BackgroundLoad load(spec);
  load.sleepUntil(o.warmup_seconds);
  std::vector<EngineSample> before;
  for (uint16_t port : ports) before.push_back(sampleEngine(port));
  const auto t0 = Clock::now();
  // KV usage is a gauge: its mean over the window, from a sample every half second.
  std::vector<double> kv_sum(ports.size(), 0.0);
  int kv_samples = 0;
  for (double at = o.warmup_seconds + 0.25; at < total_seconds; at += 0.5) {
    load.sleepUntil(at);
    for (size_t i = 0; i < ports.size(); ++i) kv_sum[i] += sampleEngine(ports[i]).kv_usage;
    ++kv_samples;
    if (auto page = loadgen::httpGet(kHost, gateway_ports[1], "/metrics")) {
      result.queue_peak = std::max(
          result.queue_peak, loadgen::metricSum(*page, "switchyard_queue_depth").value_or(0));
    }
  }
  load.sleepUntil(total_seconds);
  std::vector<EngineSample> after;
  for (uint16_t port : ports) after.push_back(sampleEngine(port));
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string fleet = loadgen::httpGet(kHost, gateway_ports[1], "/debug/fleet").value_or("");
  const loadgen::LoadReport report = load.finish();

  result.strategy = strategy;
  result.rate = rate;
  loadgen::Slo slo;
  slo.tpot_ms = o.slo_tpot_ms;
  slo.ttft_ms = o.slo_ttft_ms;
  const auto groups =
      loadgen::summarize(report, gpu_of, slo, static_cast<TimeNs>(o.warmup_seconds * kNsPerSec),
                         static_cast<TimeNs>(total_seconds * kNsPerSec));
  std::vector<std::string> types = distinct(o.gpus);
  types.push_back("all");
  for (const std::string& type : types) {
    TypeResult t;
    t.gpu = type;
    for (const auto& g : groups) {
      if (g.label == type || (type == "all" && g.label == "total")) t.stats = g;
    }
    int replicas_of_type = 0;
    double capacity_sum = 0, learned_sum = 0, knee_sum = 0;
    int learned_count = 0, knee_count = 0;
    for (size_t i = 0; i < ports.size(); ++i) {
      if (type != "all" && o.gpus[i] != type) continue;
      ++replicas_of_type;
      t.busy += (after[i].busy_seconds - before[i].busy_seconds) / wall;
      if (kv_samples > 0) t.kv_usage += kv_sum[i] / kv_samples;
      t.tokens_per_s += (after[i].generation_tokens - before[i].generation_tokens) / wall;
      capacity_sum += capacity.at(o.gpus[i]).tokens_per_s;
      const std::string name = fmt::format("{}:{}", kHost, ports[i]);
      if (const double learned = learnedValue(fleet, name, "decode"); !std::isnan(learned)) {
        learned_sum += learned;
        ++learned_count;
      }
      if (const double slowdown = learnedValue(fleet, name, "slowdown"); slowdown > 0) {
        knee_sum += 1 / slowdown;
        ++knee_count;
      }
    }
    if (replicas_of_type > 0) {
      t.busy /= replicas_of_type;
      t.kv_usage /= replicas_of_type;
    }
    t.throughput_util = capacity_sum > 0 ? t.tokens_per_s / capacity_sum : 0;
    if (learned_count > 0) t.learned_capacity = learned_sum / learned_count;
    if (knee_count > 0) t.learned_knee = knee_sum / knee_count;
    result.types.push_back(t);
  }
  for (const auto& r : report.records) {
    if (r.sent >= static_cast<TimeNs>(o.warmup_seconds * kNsPerSec) &&
        r.sent < static_cast<TimeNs>(total_seconds * kNsPerSec)) {
      result.failed += r.status != 200 || !r.error.empty();
      result.refused += r.status == 429;
    }
  }
  gateway.reset();  // SIGTERM, wait, reap
  engines.reset();
  return result;
}

std::string ms(double v) { return std::isnan(v) ? "-" : fmt::format("{:.0f}", v); }

std::string pair(double p50, double p99) { return ms(p50) + "/" + ms(p99); }

// The before/after table: one line per strategy, per-type QPS and utilisation side by side.
void printTable(const std::vector<StrategyResult>& results, const std::vector<std::string>& types,
                const DemoOptions& o) {
  std::string head = fmt::format("{:<25}", "strategy");
  for (const auto& t : types) head += fmt::format(" {:>9}", "qps " + t);
  for (const auto& t : types) head += fmt::format(" {:>9}", "busy " + t);
  head += fmt::format(" {:>7}", "gap pp");
  for (const auto& t : types) head += fmt::format(" {:>9}", "tput " + t);
  head += fmt::format(" {:>7}", "gap pp");
  for (const auto& t : types) head += fmt::format(" {:>7}", "kv " + t);
  head += fmt::format(" {:>7} {:>11} {:>9} {:>11} {:>7} {:>7}", "gap pp", "TTFT p50/99",
                      "TPOT", "E2E p50/99", "tok/s", fmt::format("good%"));
  std::printf("%s\n", head.c_str());
  for (const StrategyResult& r : results) {
    std::string line = fmt::format("{:<25}", r.strategy);
    const TypeResult& all = r.types.back();
    for (size_t i = 0; i + 1 < r.types.size(); ++i) {
      line += fmt::format(" {:>9.1f}", r.types[i].stats.qps);
    }
    double lo = 1e9, hi = -1e9, tlo = 1e9, thi = -1e9, klo = 1e9, khi = -1e9;
    for (size_t i = 0; i + 1 < r.types.size(); ++i) {
      line += fmt::format(" {:>8.0f}%", 100 * r.types[i].busy);
      lo = std::min(lo, r.types[i].busy);
      hi = std::max(hi, r.types[i].busy);
      tlo = std::min(tlo, r.types[i].throughput_util);
      thi = std::max(thi, r.types[i].throughput_util);
      klo = std::min(klo, r.types[i].kv_usage);
      khi = std::max(khi, r.types[i].kv_usage);
    }
    line += fmt::format(" {:>7.1f}", 100 * (hi - lo));
    for (size_t i = 0; i + 1 < r.types.size(); ++i) {
      line += fmt::format(" {:>8.0f}%", 100 * r.types[i].throughput_util);
    }
    line += fmt::format(" {:>7.1f}", 100 * (thi - tlo));
    for (size_t i = 0; i + 1 < r.types.size(); ++i) {
      line += fmt::format(" {:>6.0f}%", 100 * r.types[i].kv_usage);
    }
    line += fmt::format(" {:>7.1f} {:>11} {:>9} {:>11} {:>7.0f} {:>6.1f}%", 100 * (khi - klo),
                        pair(all.stats.ttft_p50_ms, all.stats.ttft_p99_ms),
                        pair(all.stats.tpot_p50_ms, all.stats.tpot_p99_ms),
                        pair(all.stats.e2e_p50_ms, all.stats.e2e_p99_ms), all.tokens_per_s,
                        all.stats.goodputPercent());
    std::printf("%s\n", line.c_str());
  }
  std::printf("busy = engine busy fraction (switchyard_engine_busy_seconds_total delta / wall), "
              "tput = tokens/s served / measured max; kv = mean KV-cache usage "
              "(vllm:gpu_cache_usage_perc, sampled every 0.5 s); gap = max - min over GPU types; "
              "latencies in ms over all requests; good%% = requests with TPOT <= %.0f ms%s\n",
              o.slo_tpot_ms,
              o.slo_ttft_ms > 0 ? fmt::format(" and TTFT <= {:.0f} ms", o.slo_ttft_ms).c_str()
                                : "");
  std::printf("per GPU type (p50/p99 ms; learned = gateway's mean decode capacity estimate at "
              "the end, tokens/s per replica; knee = streams at which its learned time per token "
              "doubles):\n");
  for (const StrategyResult& r : results) {
    for (size_t i = 0; i + 1 < r.types.size(); ++i) {
      const TypeResult& t = r.types[i];
      std::printf("  %-25s %-5s share %4.1f%%  TTFT %-9s TPOT %-7s E2E %-10s %6.0f tok/s  "
                  "good %5.1f%%  learned %s  knee %s\n",
                  r.strategy.c_str(), t.gpu.c_str(), 100 * t.stats.share,
                  pair(t.stats.ttft_p50_ms, t.stats.ttft_p99_ms).c_str(),
                  pair(t.stats.tpot_p50_ms, t.stats.tpot_p99_ms).c_str(),
                  pair(t.stats.e2e_p50_ms, t.stats.e2e_p99_ms).c_str(), t.tokens_per_s,
                  t.stats.goodputPercent(), ms(t.learned_capacity).c_str(),
                  ms(t.learned_knee).c_str());
    }
  }
}

// The SLO view: per strategy, of the requests sent in the window, how many met the SLO among
// those completed (attainment) and among all (goodput), what the gateway refused or queued.
void printSloTable(const std::vector<StrategyResult>& results, const DemoOptions& o) {
  std::printf("\n%-25s %8s %8s %7s %7s %11s %11s %13s\n", "strategy", "attain%", "goodput%",
              "refused", "queue", "TTFT p50/99", "TPOT p50/99", "E2E p50/99");
  for (const StrategyResult& r : results) {
    const loadgen::GroupStats& all = r.types.back().stats;
    std::printf("%-25s %7.1f%% %7.1f%% %7d %7.0f %11s %11s %13s\n", r.strategy.c_str(),
                all.ok > 0 ? 100.0 * all.good / all.ok : 0.0, all.goodputPercent(), r.refused,
                r.queue_peak, pair(all.ttft_p50_ms, all.ttft_p99_ms).c_str(),
                pair(all.tpot_p50_ms, all.tpot_p99_ms).c_str(),
                pair(all.e2e_p50_ms, all.e2e_p99_ms).c_str());
  }
  std::printf("attain = completed requests meeting TPOT <= %.0f ms%s; goodput = the same over "
              "all requests sent; refused = 429s; queue = peak gateway queue depth\n",
              o.slo_tpot_ms,
              o.slo_ttft_ms > 0 ? fmt::format(" and TTFT <= {:.0f} ms", o.slo_ttft_ms).c_str()
                                : "");
}

void writeCsv(const std::string& path, const std::vector<StrategyResult>& results) {
  std::ofstream csv(path);
  csv << "load_pct,rate_rps,strategy,gpu,requests,ok,qps,share_pct,busy_pct,throughput_util_pct,"
         "tokens_per_s,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,e2e_p50_ms,e2e_p99_ms,"
         "goodput_pct,learned_capacity,kv_usage_pct,attainment_pct,refused,queue_peak\n";
  for (const StrategyResult& r : results) {
    for (const TypeResult& t : r.types) {
      const auto& s = t.stats;
      csv << fmt::format("{:.0f},{:.2f},{},{},{},{},{:.2f},{:.1f},{:.1f},{:.1f},{:.0f},{:.1f},"
                         "{:.1f},{:.2f},{:.2f},{:.1f},{:.1f},{:.1f},{:.0f},{:.1f},{:.1f},{},"
                         "{:.0f}\n",
                         100 * r.load, r.rate, r.strategy, t.gpu, s.requests, s.ok, s.qps,
                         100 * s.share, 100 * t.busy, 100 * t.throughput_util, t.tokens_per_s,
                         s.ttft_p50_ms, s.ttft_p99_ms, s.tpot_p50_ms, s.tpot_p99_ms,
                         s.e2e_p50_ms, s.e2e_p99_ms, s.goodputPercent(), t.learned_capacity,
                         100 * t.kv_usage, s.ok > 0 ? 100.0 * s.good / s.ok : 0.0, r.refused,
                         r.queue_peak);
    }
  }
}

}  // namespace

int runDemo(const DemoOptions& options) {
  const auto begun = Clock::now();
  const std::string self = selfPath();
  std::vector<loadgen::RequestClass> mix = loadgen::defaultMix();
  if (!options.mix.empty()) {
    auto parsed = loadgen::parseMix(options.mix);
    if (!parsed) {
      std::fprintf(stderr, "demo: --mix must be name:weight:pmin-pmax:omin-omax,...\n");
      return 2;
    }
    mix = *parsed;
  }
  const std::vector<std::string> types = distinct(options.gpus);
  if (std::find(options.strategies.begin(), options.strategies.end(), "oracle") !=
          options.strategies.end() &&
      !pinnedMix(mix, options.oracle)) {
    std::fprintf(stderr, "demo: the oracle strategy needs --oracle class:GPU,... naming the "
                         "mix's classes\n");
    return 2;
  }
  if (!options.gpu_costs.empty() && !gpuCostsMap(options.gpu_costs, types)) {
    std::fprintf(stderr, "demo: --gpu-costs must be GPU:price,... with prices above 0, each "
                         "GPU one of --gpus\n");
    return 2;
  }
  if (std::string error;
      !options.slo_profiles.empty() && !sloProfileFiles(options.slo_profiles, types, &error)) {
    std::fprintf(stderr, "demo: --slo-profiles: %s\n", error.c_str());
    return 2;
  }

  std::printf("Switchyard heterogeneous demo: %zu emulated replicas of %s (", options.gpus.size(),
              options.model.c_str());
  for (size_t i = 0; i < options.gpus.size(); ++i) {
    std::printf("%s%s", i ? ", " : "", options.gpus[i].c_str());
  }
  std::printf("), machine: %u CPUs\nmix:", std::thread::hardware_concurrency());
  double total_weight = 0;
  for (const auto& c : mix) total_weight += c.weight;
  for (const auto& c : mix) {
    std::printf(" %s %.0f%% (prompt %d-%d words, %d-%d output tokens)", c.name.c_str(),
                100 * c.weight / total_weight, c.prompt_words_min, c.prompt_words_max, c.max_tokens_min,
                c.max_tokens_max);
  }
  std::printf("\n\n1. capacity: one replica per GPU type alone, %d closed-loop clients started over "
              "2 s, measured for %.0f s from 3 s on\n",
              options.capacity_concurrency, options.capacity_seconds);
  std::fflush(stdout);
  std::map<std::string, Capacity> capacity;
  double fleet_capacity = 0;
  // The types are measured at the same time, each engine process and load generator on its own
  // thread (an emulated replica uses a small fraction of a core at these rates).
  std::vector<std::optional<Capacity>> measured(types.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < types.size(); ++i) {
      threads.emplace_back(
          [&, i] { measured[i] = measureCapacity(self, options, types[i], mix); });
    }
    for (std::thread& t : threads) t.join();
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& gpu = types[i];
    if (!measured[i]) {
      std::fprintf(stderr, "demo: could not measure %s\n", gpu.c_str());
      return 1;
    }
    capacity[gpu] = *measured[i];
    std::printf("   %-6s %7.0f output tokens/s (busy %.0f%%)\n", gpu.c_str(),
                measured[i]->tokens_per_s, 100 * measured[i]->busy);
  }
  for (const std::string& gpu : options.gpus) fleet_capacity += capacity[gpu].tokens_per_s;
  const double mean_tokens = meanOutputTokens(mix);
  std::printf("   fleet  %7.0f output tokens/s = %.1f requests/s at %.0f mean output tokens\n",
              fleet_capacity, fleet_capacity / mean_tokens, mean_tokens);

  std::vector<double> loads = options.loads;
  if (options.rate > 0) loads = {options.rate * mean_tokens / fleet_capacity};
  std::vector<StrategyResult> all;
  int failed = 0;
  for (double load : loads) {
    const double rate = load * fleet_capacity / mean_tokens;
    std::printf("\n2. offered load %.0f%% of fleet capacity: Poisson %.1f requests/s, seed %llu "
                "(the same arrivals and shapes for every strategy); per strategy a fresh fleet and "
                "gateway (capacity learning: refresh 500 ms, window 10 s, time constant 3 s), "
                "%.0f s warm-up, %.0f s measured\n",
                100 * load, rate, static_cast<unsigned long long>(options.seed),
                options.warmup_seconds, options.seconds);
    std::fflush(stdout);
    std::vector<StrategyResult> results;
    for (const std::string& strategy : options.strategies) {
      auto result = runStrategy(self, options, strategy, rate, mix, capacity);
      if (!result) return 1;
      result->load = load;
      failed += result->failed;
      std::printf("   %-25s done (%d failed, %d of them refused)\n", strategy.c_str(),
                  result->failed, result->refused);
      std::fflush(stdout);
      results.push_back(std::move(*result));
    }
    std::printf("\n");
    printTable(results, types, options);
    printSloTable(results, options);
    all.insert(all.end(), results.begin(), results.end());
  }
  if (!options.csv_path.empty()) writeCsv(options.csv_path, all);
  std::printf("\n%d measured requests failed; total time %.0f s\n", failed,
              std::chrono::duration<double>(Clock::now() - begun).count());
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace switchyard::cli
