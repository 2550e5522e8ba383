#include "gateway/optimize_service.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/json_util.h"
#include "core/text_file.h"
#include "gateway/admin_server.h"
#include "gateway/config.h"
#include "gateway/optimize_config.h"
#include "gateway/optimize_dashboard.h"
#include "http/listener.h"
#include "loadgen/load_generator.h"
#include "observe/load_interval.h"
#include "optimizer/interval_decision.h"
#include "optimizer/load_json.h"
#include "optimizer/load_window.h"
#include "optimizer/optimizer.h"
#include "profile/profile_json.h"
#include "state/mark_sets.h"
#include "state/redis/blocking_redis.h"
#include "state/redis/redis_keys.h"

namespace switchyard::gateway {
namespace {

namespace asio = boost::asio;

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t fileStamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * kNsPerSec + st.st_mtim.tv_nsec +
         static_cast<int64_t>(st.st_size);
}

std::string errorJson(std::string_view message, std::string_view code) {
  std::string out = R"({"error":{"message":)";
  json::appendString(out, message);
  out += R"(,"type":"invalid_request_error","param":null,"code":)";
  json::appendString(out, code);
  out += "}}";
  return out;
}

// "http://host:port" → host, port.
bool splitUrl(std::string_view url, std::string& host, uint16_t& port) {
  if (url.starts_with("http://")) url.remove_prefix(7);
  while (!url.empty() && url.back() == '/') url.remove_suffix(1);
  const size_t colon = url.rfind(':');
  if (colon == std::string_view::npos) return false;
  host = std::string(url.substr(0, colon));
  if (host == "localhost") host = "127.0.0.1";
  unsigned value = 0;
  for (char c : url.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 65535) return false;
  }
  port = static_cast<uint16_t>(value);
  return port != 0 && !host.empty();
}

struct ModelState {
  std::string model;
  std::vector<size_t> deployments;  // indexes into the config's deployments
  optimizer::Stabilizer stabilizer;
  std::vector<int> in_force;       // the answer served (before overrides)
  optimizer::Recommendation last;  // the last solve
  std::vector<optimizer::PlannedCell> load;
  optimizer::LoadSummary summary;
  std::string load_error;
  bool kept_current = false;
  int64_t solved_at = 0;  // unix seconds
  uint64_t solves = 0;
  uint64_t infeasible_intervals = 0;
  uint64_t timeouts = 0;
};

class OptimizeService {
 public:
  explicit OptimizeService(std::string path)
      : path_(std::move(path)), timer_(io_), signals_(io_, SIGTERM, SIGINT) {}

  int run() {
    try {
      OptimizeConfig config = loadOptimizeConfigFile(path_);
      auto profiles = loadOptimizeProfiles(config);
      apply(std::move(config), std::move(profiles));
    } catch (const std::exception& e) {
      spdlog::error("optimize: {}", e.what());
      return 2;
    }
    stamp_ = fileStamp(path_);
    try {
      admin_ = std::make_unique<AdminServer>(io_, http::resolveListenAddress(config_.listen));
    } catch (const std::exception& e) {
      spdlog::error("optimize: cannot listen on {}: {}", config_.listen, e.what());
      return 2;
    }
    registerEndpoints();
    admin_->start();
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      spdlog::info("optimize: stopping");
      timer_.cancel();
      admin_->stop();
      io_.stop();
    });
    std::printf("listening %s:%u\n",
                http::resolveListenAddress(config_.listen).address().to_string().c_str(),
                admin_->port());
    std::fflush(stdout);
    spdlog::info("optimize: {} deployments of {} models, every {:g} s, window {} s",
                 config_.deployments.size(), models_.size(), config_.interval / 1e9,
                 config_.window_s);
    cycle();
    io_.run();
    return 0;
  }

 private:
  void apply(OptimizeConfig config, std::deque<profile::GpuProfile> profiles) {
    const bool same_deployments = [&] {
      if (config.deployments.size() != config_.deployments.size()) return false;
      for (size_t i = 0; i < config.deployments.size(); ++i) {
        if (config.deployments[i].name != config_.deployments[i].name ||
            config.deployments[i].ns != config_.deployments[i].ns ||
            config.deployments[i].model != config_.deployments[i].model) {
          return false;
        }
      }
      return true;
    }();
    config_ = std::move(config);
    profiles_ = std::move(profiles);
    if (same_deployments && !models_.empty()) {
      for (auto& [name, state] : models_)
        state.stabilizer = optimizer::Stabilizer(config_.stability);
      return;
    }
    models_.clear();
    overrides_.clear();
    for (size_t i = 0; i < config_.deployments.size(); ++i) {
      ModelState& state = models_[config_.deployments[i].model];
      state.model = config_.deployments[i].model;
      state.deployments.push_back(i);
      state.stabilizer = optimizer::Stabilizer(config_.stability);
    }
  }

  void maybeReload() {
    const int64_t stamp = fileStamp(path_);
    if (stamp == stamp_) return;
    stamp_ = stamp;
    try {
      OptimizeConfig config = loadOptimizeConfigFile(path_);
      auto profiles = loadOptimizeProfiles(config);
      if (config.listen != config_.listen) spdlog::warn("optimize: listen changes on restart only");
      config.listen = config_.listen;
      apply(std::move(config), std::move(profiles));
      config_error_.clear();
      spdlog::info("optimize: reloaded {}", path_);
    } catch (const std::exception& e) {
      ++config_errors_;
      config_error_ = e.what();
      spdlog::error("optimize: reload rejected, keeping the last good config: {}", e.what());
    }
  }

  void schedule() {
    timer_.expires_after(std::chrono::nanoseconds(config_.interval));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) cycle();
    });
  }

  void cycle() {
    maybeReload();
    if (config_.load.kind == OptimizeLoadSource::Kind::kRedis) readDiscoveredMins();
    for (auto& [name, state] : models_) {
      readLoad(state);
      solve(state);
    }
    schedule();
  }

  // ---- load ------------------------------------------------------------------------------

  void readLoad(ModelState& state) {
    state.load_error.clear();
    const OptimizeLoadSource& source = config_.load;
    const int64_t interval_s = std::max<int64_t>(1, config_.interval / kNsPerSec);
    const int64_t since = unixNow() - config_.window_s - 2 * interval_s;
    std::vector<observe::LoadInterval> intervals;
    if (source.kind == OptimizeLoadSource::Kind::kFile) {
      std::string error;
      const auto text = readTextFile(source.file, &error);
      const auto load = text ? optimizer::parseLoadJson(*text, &error) : std::nullopt;
      if (!load) {
        state.load_error = source.file + ": " + error;
        return;  // keep the last load
      }
      state.load.clear();
      state.summary = {};
      for (const optimizer::LoadCell& c : load->cells) {
        if (!load->model.empty() && load->model != state.model) continue;
        optimizer::PlannedCell p;
        p.cell = c;
        p.current_rps = p.window_rps = c.rps;
        state.load.push_back(p);
        state.summary.current_rps += c.rps;
      }
      state.summary.window_rps = state.summary.current_rps;
      return;
    }
    if (source.kind == OptimizeLoadSource::Kind::kGateways) {
      int answered = 0;
      for (const std::string& gateway : source.gateways) {
        std::string host;
        uint16_t port = 0;
        if (!splitUrl(gateway, host, port)) {
          state.load_error = "bad gateway address " + gateway;
          continue;
        }
        const auto body = loadgen::httpGet(
            host, port, fmt::format("/debug/load?model={}&since={}", state.model, since),
            1 * kNsPerSec);
        std::string error;
        auto parsed = body ? observe::parseLoadIntervalsJson(*body, &error) : std::nullopt;
        if (!parsed) {
          state.load_error = fmt::format("gateway {}: {}", gateway, body ? error : "no answer");
          continue;
        }
        ++answered;
        for (auto& i : *parsed) intervals.push_back(std::move(i));
      }
      if (answered == 0) return;  // keep the last load
    } else {
      if (!readRedis(state, since, interval_s, intervals)) return;
    }
    state.load = optimizer::planLoad(intervals, config_.window_s, &state.summary);
  }

  // The min_replicas labels the gateways' discovery published (state/mark_sets.h). Entries
  // past their deadline are ignored; an unreadable set keeps the last one read.
  void readDiscoveredMins() {
    std::string error;
    const auto url = state::redis::RedisUrl::parse(config_.load.redis, &error);
    if (!url) return;
    if (!redis_.connected() && !redis_.connect(*url, 1 * kNsPerSec)) return;
    const state::redis::RedisKeys keys(config_.load.key_prefix);
    auto reply = redis_.command({"HGETALL", keys.marks(state::kMinReplicasMarks)});
    if (!reply) return;
    const int64_t now_ms = unixNow() * 1000;
    std::map<std::string, int> mins;
    for (size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
      const std::string& value = reply->elements[i + 1].text;
      const size_t space = value.find(' ');
      if (space == std::string::npos) continue;
      int64_t deadline = 0;
      int min = 0;
      const char* end = value.data() + value.size();
      if (std::from_chars(value.data(), value.data() + space, deadline).ec != std::errc() ||
          deadline <= now_ms) {
        continue;
      }
      auto [ptr, ec] = std::from_chars(value.data() + space + 1, end, min);
      if (ec != std::errc() || ptr != end || min < 0 || min > 100000) continue;
      mins[reply->elements[i].text] = min;
    }
    discovered_mins_ = std::move(mins);
  }

  // The floor of deployment `index`: its config's, else its label's (discovery), else 0.
  int minReplicas(size_t index) const {
    const OptimizeDeployment& d = config_.deployments[index];
    if (d.min_replicas_configured) return d.min_replicas;
    const auto it = discovered_mins_.find(d.ns + "/" + d.name);
    if (it == discovered_mins_.end()) return d.min_replicas;
    return d.max_replicas >= 0 ? std::min(it->second, d.max_replicas) : it->second;
  }
  std::string_view minReplicasSource(size_t index) const {
    const OptimizeDeployment& d = config_.deployments[index];
    if (d.min_replicas_configured) return "config";
    return discovered_mins_.contains(d.ns + "/" + d.name) ? "discovery" : "default";
  }

  bool readRedis(ModelState& state, int64_t since, int64_t interval_s,
                 std::vector<observe::LoadInterval>& out) {
    std::string error;
    const auto url = state::redis::RedisUrl::parse(config_.load.redis, &error);
    if (!url) {
      state.load_error = error;
      return false;
    }
    if (!redis_.connected() && !redis_.connect(*url, 1 * kNsPerSec)) {
      state.load_error = redis_.error();
      return false;
    }
    // Every aligned interval start from `since` to now; absent keys are quiet intervals.
    const int64_t now = unixNow();
    for (int64_t start = since - since % interval_s; start <= now; start += interval_s) {
      if (config_.load.aibrix_layout) {
        auto reply = redis_.command({"GET", observe::aibrixTraceKey(state.model, start)});
        if (!reply) {
          state.load_error = redis_.error();
          return false;
        }
        if (reply->type != state::redis::RedisValue::Type::kString) continue;
        auto interval = observe::parseAibrixTrace(reply->text, state.model, start, &error);
        if (!interval) {
          state.load_error =
              fmt::format("{}: {}", observe::aibrixTraceKey(state.model, start), error);
          continue;
        }
        out.push_back(std::move(*interval));
      } else {
        const std::string key =
            observe::switchyardLoadKey(config_.load.key_prefix, state.model, start);
        auto reply = redis_.command({"HGETALL", key});
        if (!reply) {
          state.load_error = redis_.error();
          return false;
        }
        for (size_t i = 1; i < reply->elements.size(); i += 2) {
          auto interval = observe::parseLoadIntervalJson(reply->elements[i].text, &error);
          if (!interval) {
            state.load_error = fmt::format("{}: {}", key, error);
            continue;
          }
          out.push_back(std::move(*interval));
        }
      }
    }
    return true;
  }

  // ---- solve -----------------------------------------------------------------------------

  optimizer::MixProblem problemFor(const ModelState& state) const {
    optimizer::MixProblem problem;
    problem.slice_factor = config_.slice_factor;
    problem.headroom = config_.headroom;
    for (size_t index : state.deployments) {
      const OptimizeDeployment& d = config_.deployments[index];
      optimizer::DeploymentSpec spec;
      spec.name = d.name;
      spec.cost = profiles_[index].cost;
      spec.upper = d.max_replicas;
      spec.min_replicas = minReplicas(index);
      spec.profile = &profiles_[index];
      problem.deployments.push_back(spec);
    }
    for (const auto& p : state.load) problem.cells.push_back(p.cell);
    return problem;
  }

  void solve(ModelState& state) {
    const TimeNs now = SteadyClock::instance().now();
    const optimizer::MixProblem problem = problemFor(state);
    optimizer::SolveOptions options;
    options.time_limit = config_.time_limit;
    // The stabilizer's floors, the solve and the hysteresis (optimizer/interval_decision.h).
    optimizer::IntervalDecision decision =
        optimizer::decideInterval(problem, state.stabilizer, state.in_force, now, options);
    optimizer::Recommendation& r = decision.answer;
    ++state.solves;
    state.solved_at = unixNow();
    if (r.timed_out) ++state.timeouts;
    if (!r.feasible) {
      ++state.infeasible_intervals;
      spdlog::warn("optimize: {}: infeasible: {}", state.model, r.note);
    }
    state.kept_current = decision.kept_current;
    state.in_force = r.replicas;
    std::string mix;
    for (size_t d = 0; d < problem.deployments.size(); ++d) {
      mix += fmt::format("{}{}={}", d ? " " : "", problem.deployments[d].name, r.replicas[d]);
    }
    spdlog::info("optimize: {}: {:.2f} req/s -> {} (cost {:g}, {:.1f} ms{}{})", state.model,
                 state.summary.current_rps, mix, r.cost, r.solve_ms,
                 r.feasible ? "" : ", infeasible", state.kept_current ? ", kept" : "");
    state.last = std::move(r);
  }

  // ---- endpoints -------------------------------------------------------------------------

  // The deployment named by ".../<namespace>/<deployment>" under `prefix`; -1 when unknown.
  int findDeployment(std::string_view path, std::string_view prefix) const {
    path.remove_prefix(prefix.size());
    const size_t slash = path.find('/');
    if (slash == std::string_view::npos) return -1;
    const std::string_view ns = path.substr(0, slash);
    const std::string_view name = path.substr(slash + 1);
    for (size_t i = 0; i < config_.deployments.size(); ++i) {
      if (config_.deployments[i].ns == ns && config_.deployments[i].name == name) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // The replicas answered for deployment `index`: the override, else the answer in force.
  int answered(size_t index) const {
    if (auto it = overrides_.find(index); it != overrides_.end()) return it->second;
    const ModelState& state = models_.at(config_.deployments[index].model);
    for (size_t k = 0; k < state.deployments.size(); ++k) {
      if (state.deployments[k] == index && k < state.in_force.size()) return state.in_force[k];
    }
    return std::max(0, minReplicas(index));
  }

  void registerEndpoints() {
    admin_->handle("/healthz", [](std::string_view) {
      return AdminResponse{200, "application/json", R"({"status":"ok"})"};
    });
    admin_->handlePrefix("/metrics/", [this](const AdminRequest& req) {
      const int index = findDeployment(req.path, "/metrics/");
      if (index < 0) {
        return AdminResponse{404, "application/json",
                             errorJson(fmt::format("{} is not a deployment the optimizer manages "
                                                   "(expected /metrics/<namespace>/<deployment>)",
                                                   req.path),
                                       "unknown_deployment")};
      }
      const OptimizeDeployment& d = config_.deployments[static_cast<size_t>(index)];
      const int replicas = answered(static_cast<size_t>(index));
      return AdminResponse{
          200, "text/plain; version=0.0.4; charset=utf-8",
          fmt::format("# HELP vllm:deployment_replicas Number of suggested replicas{}.\n"
                      "# TYPE vllm:deployment_replicas gauge\n"
                      "vllm:deployment_replicas{{model_name=\"{}\"}} {}\n",
                      config_.hundredths ? " (hundredths of a replica)" : "", d.model,
                      config_.hundredths ? replicas * 100 : replicas)};
    });
    admin_->handlePrefix("/scale/", [this](const AdminRequest& req) {
      if (req.method != "PUT" && req.method != "POST") {
        return AdminResponse{405, "application/json",
                             errorJson("use PUT with {\"replicas\": N}", "method_not_allowed")};
      }
      const int index = findDeployment(req.path, "/scale/");
      if (index < 0) {
        return AdminResponse{
            404, "application/json",
            errorJson(fmt::format("{} is not a deployment the optimizer manages", req.path),
                      "unknown_deployment")};
      }
      simdjson::dom::parser parser;
      simdjson::dom::element root;
      int64_t replicas = 0;
      const std::string body(req.body);
      if (parser.parse(body).get(root) || root["replicas"].get_int64().get(replicas) ||
          replicas < -1 || replicas > 100000) {
        return AdminResponse{400, "application/json",
                             errorJson("the body must be {\"replicas\": N} with N >= 0, or -1 to "
                                       "reset",
                                       "invalid_replicas")};
      }
      const std::string& model = config_.deployments[static_cast<size_t>(index)].model;
      if (replicas < 0) {
        for (size_t i : models_.at(model).deployments) overrides_.erase(i);
        spdlog::info("optimize: overrides of {} reset", model);
        return AdminResponse{200, "application/json", R"({"message":"overrides reset"})"};
      }
      overrides_[static_cast<size_t>(index)] = static_cast<int>(replicas);
      spdlog::info("optimize: {} overridden to {} replicas", req.path, replicas);
      return AdminResponse{200, "application/json",
                           fmt::format(R"({{"message":"Scaled to {}"}})", replicas)};
    });
    admin_->handle("/debug/optimizer", [this](std::string_view) {
      return AdminResponse{200, "application/json", debugJson()};
    });
    admin_->handle("/metrics", [this](std::string_view) {
      return AdminResponse{200, "text/plain; version=0.0.4; charset=utf-8", metricsText()};
    });
    admin_->handle("/dashboard", [](std::string_view) {
      return AdminResponse{200, "text/html; charset=utf-8", std::string(optimizeDashboardHtml())};
    });
  }

  std::string debugJson() const {
    std::string out = "{\"config_error\":";
    json::appendString(out, config_error_);
    fmt::format_to(std::back_inserter(out),
                   ",\"interval_s\":{:g},\"window_s\":{},\"slice_factor\":{},\"headroom\":{:g},"
                   "\"replicas_unit\":\"{}\",\"models\":[",
                   config_.interval / 1e9, config_.window_s, config_.slice_factor, config_.headroom,
                   config_.hundredths ? "hundredths" : "replicas");
    bool first_model = true;
    for (const auto& [name, s] : models_) {
      if (!first_model) out += ',';
      first_model = false;
      const optimizer::Recommendation& r = s.last;
      out += "{\"model\":";
      json::appendString(out, name);
      fmt::format_to(std::back_inserter(out),
                     ",\"feasible\":{},\"timed_out\":{},\"no_load\":{},\"kept_current\":{},"
                     "\"status\":\"{}\",\"cost\":",
                     r.feasible ? "true" : "false", r.timed_out ? "true" : "false",
                     r.no_load ? "true" : "false", s.kept_current ? "true" : "false",
                     r.no_load ? "no_load" : optimizer::solveStatusName(r.status));
      json::appendNumber(out, r.cost);
      out += ",\"solve_ms\":";
      json::appendNumber(out, r.solve_ms);
      fmt::format_to(std::back_inserter(out),
                     ",\"solved_at\":{},\"solves\":{},\"infeasible_intervals\":{},\"note\":",
                     s.solved_at, s.solves, s.infeasible_intervals);
      json::appendString(out, r.note);
      out += ",\"load_error\":";
      json::appendString(out, s.load_error);
      out += ",\"load\":{\"current_rps\":";
      json::appendNumber(out, s.summary.current_rps);
      out += ",\"window_rps\":";
      json::appendNumber(out, s.summary.window_rps);
      fmt::format_to(std::back_inserter(out),
                     ",\"window_seconds\":{:g},\"intervals\":{},\"failed\":{},\"rejected\":{},"
                     "\"queued\":{},\"cells\":[",
                     s.summary.window_seconds, s.summary.intervals, s.summary.failed,
                     s.summary.rejected, s.summary.queued);
      for (size_t c = 0; c < s.load.size(); ++c) {
        const auto& p = s.load[c];
        fmt::format_to(std::back_inserter(out),
                       "{}{{\"prompt_tokens\":{:g},\"output_tokens\":{:g},\"rps\":", c ? "," : "",
                       p.cell.prompt_tokens, p.cell.output_tokens);
        json::appendNumber(out, p.cell.rps);
        out += ",\"current_rps\":";
        json::appendNumber(out, p.current_rps);
        out += ",\"window_rps\":";
        json::appendNumber(out, p.window_rps);
        out += '}';
      }
      out += "]},\"deployments\":[";
      for (size_t k = 0; k < s.deployments.size(); ++k) {
        const size_t index = s.deployments[k];
        const OptimizeDeployment& d = config_.deployments[index];
        if (k) out += ',';
        out += "{\"namespace\":";
        json::appendString(out, d.ns);
        out += ",\"name\":";
        json::appendString(out, d.name);
        out += ",\"gpu\":";
        json::appendString(out, d.gpu.empty() ? profiles_[index].gpu : d.gpu);
        out += ",\"cost\":";
        json::appendNumber(out, profiles_[index].cost);
        const auto override_it = overrides_.find(index);
        fmt::format_to(std::back_inserter(out),
                       ",\"replicas\":{},\"recommended\":{},\"override\":{},\"min_replicas\":{},"
                       "\"min_replicas_source\":\"{}\",\"max_replicas\":{},\"cells\":[",
                       answered(index), k < s.in_force.size() ? s.in_force[k] : 0,
                       override_it == overrides_.end() ? -1 : override_it->second,
                       minReplicas(index), minReplicasSource(index), d.max_replicas);
        bool first = true;
        for (size_t c = 0; c < r.model.cells.size() && c < r.slices.size(); ++c) {
          const int slices = k < r.slices[c].size() ? r.slices[c][k] : 0;
          if (slices <= 0) continue;
          const auto& cell = r.model.cells[c];
          fmt::format_to(std::back_inserter(out),
                         "{}{{\"prompt_tokens\":{:g},\"output_tokens\":{:g},\"rps\":",
                         first ? "" : ",", cell.shape.prompt_tokens, cell.shape.output_tokens);
          json::appendNumber(out, cell.shape.rps * slices / r.model.slice_factor);
          out += '}';
          first = false;
        }
        out += "]}";
      }
      out += "]}";
    }
    out += "]}\n";
    return out;
  }

  std::string metricsText() const {
    std::string out;
    auto it = std::back_inserter(out);
    auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
      fmt::format_to(it, "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    };
    family("switchyard_optimizer_solve_seconds", "gauge", "Duration of the last solve.");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_solve_seconds{{model=\"{}\"}} {:g}\n", name,
                     s.last.solve_ms / 1e3);
    }
    family("switchyard_optimizer_cost", "gauge", "Cost per hour of the answer in force.");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_cost{{model=\"{}\"}} {:g}\n", name, s.last.cost);
    }
    family("switchyard_optimizer_solves_total", "counter", "Solves run.");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_solves_total{{model=\"{}\"}} {}\n", name, s.solves);
    }
    family("switchyard_optimizer_infeasible_intervals_total", "counter",
           "Intervals whose load the available GPUs could not serve within the SLO.");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_infeasible_intervals_total{{model=\"{}\"}} {}\n",
                     name, s.infeasible_intervals);
    }
    family("switchyard_optimizer_timeouts_total", "counter",
           "Solves that hit the time limit (best incumbent or greedy answer used).");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_timeouts_total{{model=\"{}\"}} {}\n", name,
                     s.timeouts);
    }
    family("switchyard_optimizer_feasible", "gauge", "1 when the last answer is feasible.");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_feasible{{model=\"{}\"}} {}\n", name,
                     s.last.feasible ? 1 : 0);
    }
    family("switchyard_optimizer_load_rps", "gauge", "Request rate planned for (current).");
    for (const auto& [name, s] : models_) {
      fmt::format_to(it, "switchyard_optimizer_load_rps{{model=\"{}\"}} {:g}\n", name,
                     s.summary.current_rps);
    }
    family("switchyard_optimizer_replicas", "gauge", "Replicas answered per deployment.");
    for (size_t i = 0; i < config_.deployments.size(); ++i) {
      const auto& d = config_.deployments[i];
      fmt::format_to(
          it,
          "switchyard_optimizer_replicas{{namespace=\"{}\",deployment=\"{}\",model=\"{}\","
          "gpu=\"{}\"}} {}\n",
          d.ns, d.name, d.model, d.gpu.empty() ? profiles_[i].gpu : d.gpu, answered(i));
    }
    family("switchyard_optimizer_config_errors_total", "counter", "Rejected config reloads.");
    fmt::format_to(it, "switchyard_optimizer_config_errors_total {}\n", config_errors_);
    return out;
  }

  std::string path_;
  asio::io_context io_{1};
  asio::steady_timer timer_;
  asio::signal_set signals_;
  std::unique_ptr<AdminServer> admin_;
  OptimizeConfig config_;
  std::deque<profile::GpuProfile> profiles_;  // one per deployment, config order
  std::map<std::string, ModelState> models_;
  std::map<size_t, int> overrides_;
  std::map<std::string, int> discovered_mins_;  // "namespace/name" -> label (Redis source)
  state::redis::BlockingRedis redis_;
  int64_t stamp_ = -1;
  uint64_t config_errors_ = 0;
  std::string config_error_;
};

}  // namespace

int runOptimizeService(const std::string& config_path) {
  try {
    OptimizeService service(config_path);
    return service.run();
  } catch (const std::exception& e) {
    spdlog::error("optimize: {}", e.what());
    return 1;
  }
}

}  // namespace switchyard::gateway
