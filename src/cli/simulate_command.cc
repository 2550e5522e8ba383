#include "cli/simulate_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "sim/capacity.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace switchyard::cli {
namespace {

TimeNs wallNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of the calling thread (a strategy runs in one), user and system.
double threadCpuSeconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// The process's peak resident set, in MB (Linux reports kilobytes).
double peakMemoryMb() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The progress bar: simulated time, speed against real time and events per wall second.
class ProgressBar {
 public:
  ProgressBar(bool enabled, std::string label)
      : enabled_(enabled),
        tty_(::isatty(STDERR_FILENO) != 0),
        label_(std::move(label)),
        started_(wallNow()) {}

  void update(const sim::Progress& p) {
    if (!enabled_) return;
    const TimeNs now = wallNow();
    if (now - last_ < 250 * kNsPerMs && p.now < p.end) return;
    last_ = now;
    const double wall = static_cast<double>(now - started_) / 1e9;
    const double sim = static_cast<double>(p.now) / 1e9;
    const double fraction = p.end > 0 ? std::min(1.0, static_cast<double>(p.now) / p.end) : 1;
    const std::string line = fmt::format(
        "{:<26} [{:<30}] {:3.0f}% {:.0f}/{:.0f} s simulated, {:.1f}x real time, {:.2f} M "
        "events/s",
        label_, std::string(static_cast<size_t>(fraction * 30), '='), 100 * fraction, sim,
        static_cast<double>(p.end) / 1e9, wall > 0 ? sim / wall : 0,
        wall > 0 ? static_cast<double>(p.events) / wall / 1e6 : 0);
    if (tty_) {
      std::fprintf(stderr, "\r%s", line.c_str());
    } else if (fraction >= next_mark_) {
      std::fprintf(stderr, "%s\n", line.c_str());
      next_mark_ = std::floor(fraction * 4) / 4 + 0.25;
    }
  }
  void done() {
    if (enabled_ && tty_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  bool tty_;
  std::string label_;
  TimeNs started_;
  TimeNs last_ = 0;
  double next_mark_ = 0.25;
};

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

void scaleScenario(sim::Scenario& s, double scale) {
  if (scale == 1) return;
  auto scaled = [&](int n) { return std::max(1, static_cast<int>(std::lround(n * scale))); };
  for (sim::FleetGroup& g : s.fleet) g.count = scaled(g.count);
  for (sim::ScenarioEvent& e : s.events) {
    if (e.count > 0) e.count = scaled(e.count);
  }
  s.workload.arrivals.rate *= scale;
  for (sim::Burst& b : s.workload.bursts) b.count = scaled(b.count);
  if (s.workload.arrivals.clients > 0)
    s.workload.arrivals.clients = scaled(s.workload.arrivals.clients);
}

}  // namespace

int runSimulate(const SimulateOptions& options) {
  sim::Scenario scenario;
  try {
    scenario = sim::loadScenarioFile(options.scenario_path);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "simulate: %s\n", e.what());
    return 2;
  }
  if (!options.strategies.empty()) {
    scenario.strategies.clear();
    for (const std::string& name : options.strategies) {
      scenario.strategies.push_back(sim::StrategyRun{name, name, scenario.gateways});
    }
  }
  if (options.duration_s > 0) {
    scenario.duration = static_cast<TimeNs>(options.duration_s * kNsPerSec);
    if (scenario.warmup >= scenario.duration) scenario.warmup = scenario.duration / 4;
  }
  if (options.rate > 0) {
    scenario.workload.arrivals.rate = options.rate;
    scenario.workload.arrivals.load = 0;
  }
  if (options.seed > 0) scenario.seed = options.seed;
  if (!(options.scale > 0)) {
    std::fprintf(stderr, "simulate: --scale must be > 0\n");
    return 2;
  }
  scaleScenario(scenario, options.scale);
  // The simulated gateways log what live ones would (health transitions...): thousands of lines.
  spdlog::set_level(spdlog::level::err);

  const TimeNs started = wallNow();
  sim::RunSet set;
  set.scenario = &scenario;
  set.timed_routing = options.time_routing;
  double rate = 0;
  try {
    if (scenario.workload.arrivals.load > 0) {
      set.capacities = sim::measureCapacities(scenario);
      rate = sim::rateForLoad(scenario, set.capacities, scenario.workload.arrivals.load);
    }
    if (!options.out_dir.empty()) std::filesystem::create_directories(options.out_dir);
    for (const sim::StrategyRun& strategy_run : scenario.strategies) {
      const sim::Scenario one = sim::scenarioFor(scenario, strategy_run);
      const std::string& strategy = strategy_run.label;
      sim::RunOptions run;
      run.strategy = strategy_run.strategy;
      run.label = strategy_run.label;
      run.rate = rate;
      if (options.time_routing) run.wall_clock = wallNow;
      if (!options.out_dir.empty() && scenario.record.per_request_csv) {
        run.per_request_csv =
            fmt::format("{}/{}-requests.csv", options.out_dir, sim::fileStem(strategy));
      }
      ProgressBar bar(options.progress, strategy);
      run.progress = [&bar](const sim::Progress& p) { bar.update(p); };
      const TimeNs run_started = wallNow();
      const double cpu_started = threadCpuSeconds();
      set.runs.push_back(sim::runSimulation(one, run));
      set.runs.back().wall_seconds = static_cast<double>(wallNow() - run_started) / 1e9;
      set.runs.back().cpu_seconds = threadCpuSeconds() - cpu_started;
      bar.done();
    }
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "simulate: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simulate: %s\n", e.what());
    return 1;
  }
  set.wall_seconds = static_cast<double>(wallNow() - started) / 1e9;
  set.peak_memory_mb = peakMemoryMb();

  const std::string summary = sim::formatSummary(set);
  std::printf("%s", summary.c_str());
  double simulated = 0;
  uint64_t events = 0;
  for (const sim::RunResult& r : set.runs) {
    simulated += static_cast<double>(r.simulated) / 1e9;
    events += r.events;
  }
  std::printf(
      "\n%.0f simulated seconds in %.1f wall seconds (%.1fx real time), %.2f M events/s, peak "
      "memory %.0f MB\n",
      simulated, set.wall_seconds, simulated / std::max(1e-9, set.wall_seconds),
      static_cast<double>(events) / std::max(1e-9, set.wall_seconds) / 1e6, set.peak_memory_mb);
  std::fflush(stdout);

  bool ok = true;
  if (!options.summary_json.empty())
    ok &= writeFile(options.summary_json, sim::formatSummaryJson(set));
  if (!options.out_dir.empty()) {
    const std::string& dir = options.out_dir;
    ok &= writeFile(dir + "/summary.txt", summary);
    ok &= writeFile(dir + "/summary.csv", sim::formatSummaryCsv(set));
    ok &= writeFile(dir + "/summary.json", sim::formatSummaryJson(set));
    if (scenario.record.per_second_csv || scenario.record.plots) {
      for (const sim::RunResult& r : set.runs) {
        ok &= writeFile(fmt::format("{}/{}-seconds.csv", dir, sim::fileStem(r.strategy)),
                        sim::formatSecondsCsv(r));
        if (!r.autoscale.empty()) {
          ok &= writeFile(fmt::format("{}/{}-autoscale.csv", dir, sim::fileStem(r.strategy)),
                          sim::formatAutoscaleCsv(r));
        }
      }
    }
    if (scenario.record.plots) {
      const std::string script = dir + "/plots.gp";
      ok &= writeFile(script, sim::formatPlotScript(set, dir));
      if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
        const std::string command = fmt::format("gnuplot '{}'", script);
        if (std::system(command.c_str()) != 0) {
          std::fprintf(stderr, "simulate: gnuplot failed on %s\n", script.c_str());
        }
      } else {
        std::fprintf(stderr, "simulate: gnuplot not found; %s not drawn\n", script.c_str());
      }
    }
  }
  if (!ok) {
    std::fprintf(stderr, "simulate: could not write every output file\n");
    return 1;
  }
  return 0;
}

}  // namespace switchyard::cli
