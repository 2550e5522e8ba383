#include "core/cpu_budget.h"

#include <sched.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace switchyard {
namespace {

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool parsePositive(std::string_view text, long long& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out > 0;
}

}  // namespace

std::optional<double> parseCpuMax(std::string_view text) {
  text = trim(text);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view quota = text.substr(0, space);
  const std::string_view period = trim(text.substr(space + 1));
  long long period_us = 0;
  long long quota_us = 0;
  if (quota == "max" || !parsePositive(period, period_us)) return std::nullopt;
  if (!parsePositive(quota, quota_us)) return std::nullopt;
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

std::optional<std::string> parseCgroupV2Path(std::string_view proc_self_cgroup) {
  while (!proc_self_cgroup.empty()) {
    const size_t eol = proc_self_cgroup.find('\n');
    const std::string_view line = proc_self_cgroup.substr(0, eol);
    if (line.substr(0, 3) == "0::") return std::string(trim(line.substr(3)));
    if (eol == std::string_view::npos) break;
    proc_self_cgroup.remove_prefix(eol + 1);
  }
  return std::nullopt;
}

CpuBudget detectCpuBudget() {
  CpuBudget budget;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  int cpus = static_cast<int>(hardware);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 0) {
    cpus = CPU_COUNT(&mask);
    budget.source = fmt::format("affinity mask ({} of {} CPUs)", cpus, hardware);
  } else {
    budget.source = fmt::format("hardware ({} CPUs)", hardware);
  }
  // The quota of the process's cgroup and of every ancestor: the tightest one applies.
  if (const auto self = readFile("/proc/self/cgroup")) {
    if (auto path = parseCgroupV2Path(*self)) {
      std::string dir = *path;
      for (;;) {
        const std::string file = "/sys/fs/cgroup" + (dir == "/" ? std::string() : dir) +
                                 "/cpu.max";
        if (const auto text = readFile(file)) {
          if (const auto quota = parseCpuMax(*text)) {
            const int allowed = std::max(1, static_cast<int>(std::ceil(*quota - 1e-9)));
            if (allowed < cpus) {
              cpus = allowed;
              budget.source = fmt::format("cgroup cpu.max {} ({})", std::string(trim(*text)),
                                          file);
            }
          }
        }
        if (dir.empty() || dir == "/") break;
        const size_t slash = dir.rfind('/');
        dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
      }
    }
  }
  budget.cpus = std::max(1, cpus);
  return budget;
}

}  // namespace switchyard
