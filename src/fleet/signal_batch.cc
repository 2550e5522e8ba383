#include "fleet/signal_batch.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace switchyard::fleet {
namespace {

void appendValue(std::string& out, double v) {
  out.push_back(' ');
  if (std::isnan(v)) {
    out.push_back('-');
  } else {
    fmt::format_to(std::back_inserter(out), "{:g}", v);
  }
}

// Splits off the next space-separated token.
std::string_view nextToken(std::string_view& rest) {
  const size_t space = rest.find(' ');
  const std::string_view token = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return token;
}

bool parseNumber(std::string_view token, double& out) {
  if (token == "-") {
    out = EngineSignals::kUnknown;
    return true;
  }
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size() && !token.empty();
}

double count(double v) { return std::isfinite(v) && v >= 0 ? v : EngineSignals::kUnknown; }
double fraction(double v) {
  return std::isfinite(v) && v >= 0 && v <= 1 ? v : EngineSignals::kUnknown;
}

}  // namespace

void appendSignalRecord(std::string& out, std::string_view replica, bool ok,
                        const EngineSignals& signals, int64_t age_ms) {
  out.append(replica);
  if (ok) {
    appendValue(out, signals.running);
    appendValue(out, signals.waiting);
    appendValue(out, signals.kv_usage);
    appendValue(out, signals.cpu_kv_usage);
  } else {
    out.append(" !");
  }
  fmt::format_to(std::back_inserter(out), " {}\n", std::max<int64_t>(0, age_ms));
}

void appendCapacityRecord(std::string& out, std::string_view replica, double kv_capacity_tokens) {
  out.append(replica);
  fmt::format_to(std::back_inserter(out), " # {:.0f}\n", kv_capacity_tokens);
}

namespace internal {

bool parseSignalRecord(std::string_view line, SignalRecord& out) {
  std::string_view rest = line;
  out = SignalRecord{};
  out.replica = nextToken(rest);
  if (out.replica.empty()) return false;
  std::string_view token = nextToken(rest);
  if (token == "#") {
    double tokens = 0;
    token = nextToken(rest);
    if (!parseNumber(token, tokens) || !std::isfinite(tokens) || tokens < 1 || !rest.empty()) {
      return false;
    }
    out.capacity_only = true;
    out.signals.kv_capacity_tokens = tokens;
    return true;
  }
  if (token == "!") {
    out.ok = false;
  } else {
    out.ok = true;
    double values[4];
    for (int i = 0; i < 4; ++i) {
      if (i > 0) token = nextToken(rest);
      if (!parseNumber(token, values[i])) return false;
    }
    out.signals.running = count(values[0]);
    out.signals.waiting = count(values[1]);
    out.signals.kv_usage = fraction(values[2]);
    out.signals.cpu_kv_usage = fraction(values[3]);
  }
  token = nextToken(rest);
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out.age_ms);
  if (token.empty() || ec != std::errc() || ptr != token.data() + token.size() || out.age_ms < 0 ||
      !rest.empty()) {
    return false;
  }
  return true;
}

}  // namespace internal
}  // namespace switchyard::fleet
