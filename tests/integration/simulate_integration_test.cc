// `switchyard simulate` as a user runs it: the output files and the summary JSON's contract, and
// a scenario mistake as a clear exit status 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"

namespace switchyard::testing {
namespace {

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The summary's per-strategy figures without the wall-clock ones (`"wall_seconds": ...` lines),
// which differ from run to run.
std::string simulatedFigures(const std::string& summary) {
  std::istringstream lines(summary.substr(summary.find("\"strategies\"")));
  std::string kept;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"wall_seconds\"") == std::string::npos) kept += line + "\n";
  }
  return kept;
}

const char* const kScenario = R"(name: tiny
seed: 3
duration_s: 6
warmup_s: 1
fleet:
  - {gpu: L20, count: 1}
  - {gpu: A100, count: 2}
gateways: {count: 2, sync_interval_ms: 100}
strategies:
  - least-request
  - {label: lb sample 2, strategy: load-balance, routing: {candidate_sample: 2}}
workload:
  arrivals: {poisson: {rate: 8}}
  mix: [{prompt_tokens: [20, 200], output_tokens: [16, 64]}]
record: {per_request_csv: true}
)";

TEST(SimulateIntegrationTest, WritesTheSummaryJsonSeriesAndPlots) {
  TempFile scenario(kScenario, ".yaml");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("switchyard-simulate-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string json = (dir / "out.json").string();
  auto child =
      spawnSwitchyard({"simulate", "--scenario", scenario.path(), "-o", (dir / "out").string(),
                       "--summary-json", json, "--no-progress", "--no-routing-timer"});
  ASSERT_EQ(child->waitExit(deadlineIn(120s)), 0);
  const std::string summary = readFile(json);
  for (const char* key :
       {"\"simulated_seconds\"", "\"wall_seconds\"", "\"events\"", "\"strategies\"",
        "\"least-request\"", "\"lb sample 2\"", "\"requests\"", "\"goodput\"", "\"ttft_p99_ms\"",
        "\"e2e_p99_ms\"", "\"share_by_gpu\"", "\"L20\"", "\"A100\""}) {
    EXPECT_NE(summary.find(key), std::string::npos) << key << " missing in\n" << summary;
  }
  // The machine's figures: the peak resident set and each run's CPU time, measured.
  for (const char* key : {"\"peak_memory_mb\": ", "\"cpu_seconds\": "}) {
    const size_t at = summary.find(key);
    ASSERT_NE(at, std::string::npos) << key << " missing in\n" << summary;
    EXPECT_GT(std::stod(summary.substr(at + std::string(key).size())), 0.0) << key;
  }
  for (const char* file :
       {"summary.txt", "summary.csv", "summary.json", "least-request-seconds.csv",
        "lb_sample_2-seconds.csv", "least-request-requests.csv", "plots.gp"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "out" / file)) << file;
  }
  // Each plotted line keeps its group's rows and maps the others to NaN, which gnuplot must skip
  // as missing: as undefined values they would break the line everywhere and leave it empty.
  EXPECT_NE(readFile(dir / "out" / "plots.gp").find("set datafile missing NaN"),
            std::string::npos);
  // The same scenario and seed give the same figures.
  auto again =
      spawnSwitchyard({"simulate", "--scenario", scenario.path(), "--summary-json",
                       (dir / "again.json").string(), "--no-progress", "--no-routing-timer"});
  ASSERT_EQ(again->waitExit(deadlineIn(120s)), 0);
  const std::string second = readFile(dir / "again.json");
  EXPECT_EQ(simulatedFigures(summary), simulatedFigures(second));
  std::filesystem::remove_all(dir);
}

TEST(SimulateIntegrationTest, AScenarioMistakeExitsWithTheFileLineAndKey) {
  TempFile scenario("fleet: [{gpu: A100}]\nstrategies: [fastest]\n", ".yaml");
  auto child = spawnSwitchyard({"simulate", "--scenario", scenario.path(), "--no-progress"});
  EXPECT_EQ(child->waitExit(deadlineIn(30s)), 2);
}

}  // namespace
}  // namespace switchyard::testing
