#include "cli/profile_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "core/clock.h"
#include "core/text_file.h"
#include "engine/perf_profiles.h"
#include "engine/virtual_run.h"
#include "loadgen/load_generator.h"
#include "profile/emulated_profile.h"
#include "profile/profile_json.h"
#include "profile/raw_profile.h"
#include "profile/step_stats.h"
#include "profile/sweep_plan.h"
#include "state/redis/profile_store.h"

namespace switchyard::cli {
namespace {

struct SweepCliOptions {
  std::string rates;
  std::string slo;
  int percentile = 99;
  double step_seconds = 60;
  int min_requests = 40;
  int max_requests = 300;
  double growth = 1.5;
  int refine = 2;
  uint64_t seed = 1;
};

void addSweepOptions(CLI::App* cmd, SweepCliOptions& o) {
  cmd->add_option("--rates", o.rates,
                  "fixed request rates per cell, e.g. 0.5,1,2 (default: "
                  "a ladder from ~0.5 in flight until the SLO clearly breaks)");
  cmd->add_option("--step-seconds", o.step_seconds, "seconds of arrivals per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--min-requests", o.min_requests, "requests per step, at least")
      ->check(CLI::Range(5, 100000))
      ->capture_default_str();
  cmd->add_option("--max-requests", o.max_requests, "requests per step, at most")
      ->check(CLI::Range(5, 100000))
      ->capture_default_str();
  cmd->add_option("--growth", o.growth, "rate ladder factor")
      ->check(CLI::Range(1.05, 10.0))
      ->capture_default_str();
  cmd->add_option("--refine", o.refine, "bisections around the SLO boundary")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "arrival and prompt seed")->capture_default_str();
}

std::optional<profile::SweepSettings> sweepSettings(const SweepCliOptions& o, std::string& error) {
  profile::SweepSettings s;
  if (!o.rates.empty()) {
    auto rates = profile::parseRateList(o.rates);
    if (!rates) {
      error = "--rates: expected positive numbers separated by commas";
      return std::nullopt;
    }
    s.rates = *rates;
  }
  if (!o.slo.empty()) {
    auto slo = profile::Slo::parse(o.slo, &error);
    if (!slo) return std::nullopt;
    s.stop_slo = *slo;
  }
  s.stop_slo.percentile = o.percentile;
  s.step_seconds = o.step_seconds;
  s.min_requests = o.min_requests;
  s.max_requests = std::max(o.max_requests, o.min_requests);
  s.growth = o.growth;
  s.refine = o.refine;
  return s;
}

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- switchyard profile ----------------------------------------------------------------------

struct ProfileOptions {
  std::string endpoint;
  std::string model = "llama2-7b";
  std::string output;
  std::string prompts;
  std::string outputs;
  std::string cells;
  double max_minutes = 0;
  bool no_progress = false;
  SweepCliOptions sweep;
};

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string path = "/v1/chat/completions";
};

std::optional<Endpoint> parseEndpoint(const std::string& text) {
  std::string_view rest = text;
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  Endpoint e;
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view path = rest.substr(slash);
    if (path != "/" && path != "/v1" && path != "/v1/") e.path = std::string(path);
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  e.host = std::string(rest.substr(0, colon));
  if (e.host == "localhost") e.host = "127.0.0.1";
  int port = 0;
  for (char c : rest.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
    if (port > 65535) return std::nullopt;
  }
  if (port == 0 || e.host.empty()) return std::nullopt;
  e.port = static_cast<uint16_t>(port);
  return e;
}

// "128x16,512x64": prompt × output pairs.
std::optional<std::vector<std::pair<int, int>>> parseCells(const std::string& text) {
  std::vector<std::pair<int, int>> cells;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    int p = 0, o = 0, used = 0;
    const std::string part = text.substr(start, end - start);
    if (std::sscanf(part.c_str(), "%dx%d%n", &p, &o, &used) != 2 ||
        used != static_cast<int>(part.size()) || p < 1 || o < 1) {
      return std::nullopt;
    }
    cells.emplace_back(p, o);
    start = end + 1;
  }
  if (cells.empty()) return std::nullopt;
  return cells;
}

class HttpSweep {
 public:
  HttpSweep(const ProfileOptions& options, Endpoint endpoint)
      : options_(options), endpoint_(std::move(endpoint)) {}

  loadgen::LoadSpec spec(int prompt_words, int output_tokens) const {
    loadgen::LoadSpec s;
    s.host = endpoint_.host;
    s.port = endpoint_.port;
    s.path = endpoint_.path;
    s.model = options_.model;
    s.prompt_words = std::max(1, prompt_words);
    s.max_tokens = output_tokens;
    s.ignore_eos = true;
    s.stream = true;
    return s;
  }

  // Prompt tokens per word of the generated prompts, from the server's usage (tokenizers
  // differ); nullopt when the server does not answer.
  std::optional<double> calibrate() {
    loadgen::LoadSpec s = spec(200, 1);
    s.requests = 1;
    s.concurrency = 1;
    s.deadline = 60 * kNsPerSec;
    const auto report = loadgen::runLoad(s);
    const auto& r = report.records.front();
    if (r.status != 200 || !r.error.empty()) return std::nullopt;
    if (r.prompt_tokens <= 0) return 1.7;  // no usage: the emulator's ~1.7 tokens per word
    return static_cast<double>(r.prompt_tokens) / 200.0;
  }

  int wordsFor(int prompt_tokens) const {
    return std::max(1, static_cast<int>(std::lround(prompt_tokens / tokens_per_word_)));
  }

  // Median of three sequential requests' E2E, seconds; 0 when they fail.
  double unloadedE2e(int prompt_tokens, int output_tokens) {
    loadgen::LoadSpec s = spec(wordsFor(prompt_tokens), output_tokens);
    s.requests = 3;
    s.concurrency = 1;
    s.deadline = 300 * kNsPerSec;
    auto report = loadgen::runLoad(s);
    std::vector<double> e2e;
    for (const auto& r : report.records) {
      if (r.status == 200 && r.error.empty() && r.done > 0) e2e.push_back(r.done / 1e9);
    }
    return e2e.empty() ? 0 : loadgen::percentile(e2e, 50);
  }

  profile::Step runStep(int prompt_tokens, int output_tokens, double rate, int count,
                        double unloaded_e2e, uint64_t seed) {
    loadgen::LoadSpec s = spec(wordsFor(prompt_tokens), output_tokens);
    s.rate = rate;
    s.requests = count;
    s.seed = seed;
    // The arrivals `gen-profile --emulated` offers this step too.
    for (const auto& a : engine::poissonArrivals(rate, count, prompt_tokens, output_tokens, seed)) {
      s.send_at.push_back(a.at);
    }
    const double arrivals_s = count / rate;
    const double drain_s = std::max(10.0, 20 * unloaded_e2e);
    s.deadline = static_cast<TimeNs>((arrivals_s * 1.5 + drain_s) * 1e9);
    s.request_timeout = static_cast<TimeNs>((arrivals_s + drain_s) * 1e9);
    const auto report = loadgen::runLoad(s);
    std::vector<profile::RequestTiming> timings;
    timings.reserve(report.records.size());
    for (const auto& r : report.records) {
      profile::RequestTiming t;
      t.arrival = r.sent;
      const bool answered = r.status == 200 && r.error.empty();
      t.failed = !answered && !(r.status == 0 && r.error.empty());
      if (answered && r.done >= 0) {
        t.finished = r.sent + r.done;
        if (r.first_byte >= 0) t.first_token = r.sent + r.first_byte;
        t.output_tokens = static_cast<int>(r.output_tokens);
      }
      timings.push_back(t);
    }
    return profile::summarizeStep(timings, rate);
  }

  void setTokensPerWord(double v) { tokens_per_word_ = v; }

 private:
  const ProfileOptions& options_;
  Endpoint endpoint_;
  double tokens_per_word_ = 1.7;
};

void progress(bool enabled, size_t cell, size_t cells, const profile::RawCell& c, size_t step,
              double rate, double elapsed_s) {
  if (!enabled) return;
  const int width = 24;
  const int filled = cells ? static_cast<int>(width * cell / cells) : width;
  fmt::print(stderr, "\r[{}{}] cell {}/{} prompt {} x output {}  step {} at {:.3g} req/s  {:.0f}s ",
             std::string(filled, '#'), std::string(width - filled, '.'), cell + 1, cells,
             c.prompt_tokens, c.output_tokens, step + 1, rate, elapsed_s);
  std::fflush(stderr);
}

int runProfile(const ProfileOptions& options) {
  const auto endpoint = parseEndpoint(options.endpoint);
  if (!endpoint) {
    fmt::print(stderr, "profile: --endpoint must be http://HOST:PORT\n");
    return 2;
  }
  std::string error;
  auto settings = sweepSettings(options.sweep, error);
  if (!settings) {
    fmt::print(stderr, "profile: {}\n", error);
    return 2;
  }
  std::vector<std::pair<int, int>> grid;
  if (!options.cells.empty()) {
    auto cells = parseCells(options.cells);
    if (!cells) {
      fmt::print(stderr, "profile: --cells expects PROMPTxOUTPUT pairs, e.g. 128x16,1024x64\n");
      return 2;
    }
    grid = *cells;
  } else {
    auto prompts = options.prompts.empty() ? std::optional(profile::defaultPromptGrid())
                                           : profile::parseTokenList(options.prompts);
    auto outputs = options.outputs.empty() ? std::optional(profile::defaultOutputGrid())
                                           : profile::parseTokenList(options.outputs);
    if (!prompts || !outputs) {
      fmt::print(stderr, "profile: --prompts/--outputs expect token counts, e.g. 128,512\n");
      return 2;
    }
    for (int o : *outputs) {
      for (int p : *prompts) grid.emplace_back(p, o);
    }
  }

  profile::RawMeasurements raw;
  if (::access(options.output.c_str(), F_OK) == 0) {
    const auto text = readTextFile(options.output, &error);
    auto previous = text ? profile::parseRawJson(*text, &error) : std::nullopt;
    if (!previous) {
      fmt::print(stderr, "profile: {} exists but is not a raw profile ({}); not overwriting\n",
                 options.output, error);
      return 2;
    }
    raw = std::move(*previous);
    size_t done = 0;
    for (const auto& c : raw.cells) done += c.done;
    fmt::print(stderr, "profile: resuming {} ({} cells done)\n", options.output, done);
  }
  raw.endpoint = options.endpoint;
  raw.model = options.model;
  if (raw.created == 0) raw.created = unixNow();
  for (auto [p, o] : grid) {
    if (raw.find(p, o) == nullptr) raw.cells.push_back({p, o, false, {}});
  }
  auto save = [&] {
    std::string write_error;
    if (!writeTextFile(options.output, profile::rawToJson(raw), &write_error)) {
      fmt::print(stderr, "\nprofile: {}\n", write_error);
      return false;
    }
    return true;
  };
  if (!save()) return 1;

  HttpSweep sweep(options, *endpoint);
  const auto calibration = sweep.calibrate();
  if (!calibration) {
    fmt::print(stderr, "profile: {} does not answer a chat completion for model {}\n",
               options.endpoint, options.model);
    return 1;
  }
  sweep.setTokensPerWord(*calibration);
  const TimeNs start = SteadyClock::instance().now();
  const TimeNs budget = options.max_minutes > 0 ? static_cast<TimeNs>(options.max_minutes * 60e9)
                                                : std::numeric_limits<TimeNs>::max();
  const bool show = !options.no_progress && ::isatty(STDERR_FILENO);
  size_t index = 0;
  for (auto [p, o] : grid) {
    profile::RawCell& cell = *raw.find(p, o);
    if (cell.done) {
      ++index;
      continue;
    }
    cell.steps.clear();
    const double unloaded = sweep.unloadedE2e(p, o);
    if (unloaded <= 0) {
      fmt::print(stderr, "\nprofile: prompt {} x output {}: requests fail; cell skipped\n", p, o);
      cell.done = true;
      save();
      ++index;
      continue;
    }
    profile::CellSweep plan(*settings, unloaded);
    while (const auto rate = plan.nextRate()) {
      const double elapsed = (SteadyClock::instance().now() - start) / 1e9;
      if (SteadyClock::instance().now() - start > budget) {
        fmt::print(stderr,
                   "\nprofile: --max-minutes reached; {} keeps what was measured, run the "
                   "same command again to resume\n",
                   options.output);
        return 0;
      }
      progress(show, index, grid.size(), cell, plan.steps().size(), *rate, elapsed);
      const int step = static_cast<int>(plan.steps().size());
      plan.record(sweep.runStep(p, o, *rate, settings->requestsFor(*rate), unloaded,
                                profile::stepSeed(options.sweep.seed, p, o, step)));
      cell.steps = plan.steps();
      save();
    }
    cell.done = true;
    save();
    ++index;
  }
  if (show) fmt::print(stderr, "\n");
  fmt::print(stderr, "profile: {} cells measured into {}\n", grid.size(), options.output);
  return 0;
}

// ---- switchyard gen-profile ------------------------------------------------------------------

struct GenOptions {
  // Virtual time is cheap: the emulated sweep measures more requests per step than an HTTP one.
  GenOptions() {
    const profile::EmulatedSweepOptions defaults = profile::defaultEmulatedSweep({});
    sweep.min_requests = defaults.sweep.min_requests;
    sweep.max_requests = defaults.sweep.max_requests;
  }
  std::string raw_path;
  std::string emulated_gpu;
  std::string model;
  std::string deployment;
  std::string gpu;
  double cost = 1;
  std::string output;
  std::string prompts;
  std::string outputs;
  int tp = 1;
  std::string profiles_path;
  SweepCliOptions sweep;
};

int runGenProfile(const GenOptions& options) {
  std::string error;
  profile::Slo slo;
  if (!options.sweep.slo.empty()) {
    auto parsed = profile::Slo::parse(options.sweep.slo, &error);
    if (!parsed) {
      fmt::print(stderr, "gen-profile: --slo: {}\n", error);
      return 2;
    }
    slo = *parsed;
  }
  slo.percentile = options.sweep.percentile;
  if (options.raw_path.empty() == options.emulated_gpu.empty()) {
    fmt::print(stderr, "gen-profile: give either RAW.json or --emulated GPU\n");
    return 2;
  }
  profile::RawMeasurements raw;
  profile::ProfileLabels labels;
  labels.cost = options.cost;
  labels.created = unixNow();
  labels.model = options.model;
  if (!options.emulated_gpu.empty()) {
    engine::PerfConfig config;
    try {
      const engine::ProfileCatalog catalog = options.profiles_path.empty()
                                                 ? engine::builtinProfiles()
                                                 : engine::loadProfilesFile(options.profiles_path);
      config =
          engine::makePerfConfig(catalog, options.emulated_gpu,
                                 options.model.empty() ? "llama2-7b" : options.model, options.tp);
    } catch (const std::exception& e) {
      fmt::print(stderr, "gen-profile: {}\n", e.what());
      return 2;
    }
    auto settings = sweepSettings(options.sweep, error);
    if (!settings) {
      fmt::print(stderr, "gen-profile: {}\n", error);
      return 2;
    }
    profile::EmulatedSweepOptions sweep;
    sweep.sweep = *settings;
    sweep.seed = options.sweep.seed;
    auto prompts = options.prompts.empty() ? std::optional(profile::defaultPromptGrid())
                                           : profile::parseTokenList(options.prompts);
    auto outputs = options.outputs.empty() ? std::optional(profile::defaultOutputGrid())
                                           : profile::parseTokenList(options.outputs);
    if (!prompts || !outputs) {
      fmt::print(stderr, "gen-profile: --prompts/--outputs expect token counts, e.g. 128,512\n");
      return 2;
    }
    sweep.prompts = *prompts;
    sweep.outputs = *outputs;
    raw = profile::sweepEmulated(config, sweep);
    labels.gpu = options.gpu.empty() ? config.gpu : options.gpu;
    if (labels.model.empty()) labels.model = config.model;
  } else {
    const auto text = readTextFile(options.raw_path, &error);
    auto parsed = text ? profile::parseRawJson(*text, &error) : std::nullopt;
    if (!parsed) {
      fmt::print(stderr, "gen-profile: {}: {}\n", options.raw_path, error);
      return 2;
    }
    raw = std::move(*parsed);
    labels.gpu = options.gpu;
  }
  labels.deployment = options.deployment.empty()
                          ? (labels.gpu.empty() ? std::string("default") : labels.gpu)
                          : options.deployment;
  if (labels.gpu.empty()) labels.gpu = labels.deployment;
  const profile::GpuProfile built = profile::buildProfile(raw, labels, slo);
  if (std::string invalid = built.validate(); !invalid.empty()) {
    fmt::print(stderr, "gen-profile: the measurements give no valid profile: {}\n", invalid);
    return 1;
  }
  if (options.output.empty() || options.output == "-") {
    fmt::print("{}", profile::profileToJson(built));
    return 0;
  }
  if (state::redis::RedisUrl::isRedisUrl(options.output)) {
    auto url = state::redis::RedisUrl::parse(options.output, &error);
    std::string key;
    if (!url || !state::redis::storeProfile(*url, built, &error, &key)) {
      fmt::print(stderr, "gen-profile: {}\n", error);
      return 1;
    }
    fmt::print(stderr, "gen-profile: stored in Redis as {}\n", key);
    return 0;
  }
  if (!writeTextFile(options.output, profile::profileToJson(built), &error)) {
    fmt::print(stderr, "gen-profile: {}\n", error);
    return 1;
  }
  return 0;
}

}  // namespace

void addProfileCommands(CLI::App& app, int& exit_code) {
  auto profile_options = std::make_shared<ProfileOptions>();
  CLI::App* profile = app.add_subcommand(
      "profile", "Sweep request rates per prompt x output shape against an OpenAI endpoint");
  profile->add_option("--endpoint", profile_options->endpoint, "http://HOST:PORT")->required();
  profile->add_option("--model", profile_options->model)->capture_default_str();
  profile
      ->add_option("-o,--output", profile_options->output,
                   "raw measurements (JSON; resumed "
                   "when it exists)")
      ->required();
  profile->add_option("--prompts", profile_options->prompts,
                      "prompt lengths, tokens (default "
                      "32,64,...,8192)");
  profile->add_option("--outputs", profile_options->outputs,
                      "output lengths, tokens (default "
                      "16,32,...,1024)");
  profile->add_option("--cells", profile_options->cells,
                      "only these PROMPTxOUTPUT cells, e.g. 128x16,1024x64");
  profile->add_option("--max-minutes", profile_options->max_minutes,
                      "time budget; the output stays resumable");
  profile->add_option("--slo", profile_options->sweep.slo,
                      "stop a cell's ladder when this SLO clearly breaks, e.g. tpot=50ms");
  profile->add_option("--percentile", profile_options->sweep.percentile)
      ->check(CLI::IsMember({0, 50, 90, 99}))
      ->capture_default_str();
  profile->add_flag("--no-progress", profile_options->no_progress, "no progress bar");
  addSweepOptions(profile, profile_options->sweep);
  profile->callback([profile_options, &exit_code] { exit_code = runProfile(*profile_options); });

  auto gen = std::make_shared<GenOptions>();
  CLI::App* gen_cmd = app.add_subcommand(
      "gen-profile", "Build a GPU profile from raw measurements or the engine model");
  gen_cmd->add_option("raw", gen->raw_path, "RAW.json written by `switchyard profile`");
  gen_cmd->add_option("--emulated", gen->emulated_gpu,
                      "derive it from the engine model of this GPU (A10, L20, ...) instead");
  gen_cmd->add_option("--model", gen->model, "model (with --emulated: its engine profile)");
  gen_cmd->add_option("--deployment", gen->deployment, "deployment name (default: the GPU)");
  gen_cmd->add_option("--gpu", gen->gpu, "GPU type recorded in the profile");
  gen_cmd->add_option("--cost", gen->cost, "cost per replica-hour")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  gen_cmd->add_option("--slo", gen->sweep.slo, "e.g. tpot=50ms or ttft=1s,tpot=50ms");
  gen_cmd->add_option("--percentile", gen->sweep.percentile)
      ->check(CLI::IsMember({0, 50, 90, 99}))
      ->capture_default_str();
  gen_cmd->add_option("-o,--output", gen->output,
                      "FILE or redis://HOST:PORT/?model=M (default "
                      "stdout)");
  gen_cmd->add_option("--prompts", gen->prompts, "with --emulated: prompt lengths");
  gen_cmd->add_option("--outputs", gen->outputs, "with --emulated: output lengths");
  gen_cmd->add_option("--tp", gen->tp, "with --emulated: tensor-parallel GPUs")
      ->check(CLI::Range(1, 64));
  gen_cmd->add_option("--profiles", gen->profiles_path, "with --emulated: engine profiles YAML")
      ->check(CLI::ExistingFile);
  addSweepOptions(gen_cmd, gen->sweep);
  gen_cmd->callback([gen, &exit_code] { exit_code = runGenProfile(*gen); });
}

}  // namespace switchyard::cli
