#include "engine/faults.h"

#include <fmt/format.h>
#include <simdjson.h>

namespace switchyard::engine {
namespace {

namespace dom = simdjson::dom;

// A probability: a number in [0, 1] or a boolean (true = always).
bool readProbability(dom::element value, double& out) {
  if (bool flag = false; value.get_bool().get(flag) == simdjson::SUCCESS) {
    out = flag ? 1 : 0;
    return true;
  }
  double number = 0;
  if (value.get_double().get(number) != simdjson::SUCCESS) return false;
  out = number;
  return number >= 0 && number <= 1;
}

bool readInt(dom::element value, int64_t low, int64_t high, int64_t& out) {
  int64_t number = 0;
  if (value.get_int64().get(number) != simdjson::SUCCESS) return false;
  out = number;
  return number >= low && number <= high;
}

}  // namespace

Parsed<FaultConfig> parseFaults(std::string_view json) {
  dom::parser parser;
  dom::element root;
  if (auto error = parser.parse(json.data(), json.size()).get(root)) {
    return {std::nullopt, fmt::format("Invalid JSON body: {}", simdjson::error_message(error))};
  }
  dom::object object;
  if (root.get_object().get(object)) return {std::nullopt, "the body must be a JSON object"};
  FaultConfig faults;
  for (auto [key, value] : object) {
    bool ok = true;
    int64_t number = 0;
    if (key == "error_rate") {
      ok = readProbability(value, faults.error_rate);
    } else if (key == "error_status") {
      ok = readInt(value, 400, 599, number);
      faults.error_status = static_cast<int>(number);
    } else if (key == "reset") {
      ok = readProbability(value, faults.reset);
    } else if (key == "hang" || key == "hang_before_first_byte") {
      ok = readProbability(value, faults.hang);
    } else if (key == "stall_mid_stream_ms") {
      ok = readInt(value, 0, 3'600'000, number);
      faults.stall_mid_stream_ms = static_cast<int>(number);
    } else if (key == "stall_after_tokens") {
      ok = readInt(value, 0, 1'000'000, number);
      faults.stall_after_tokens = static_cast<int>(number);
    } else if (key == "truncate_stream") {
      ok = readProbability(value, faults.truncate_stream);
    } else if (key == "truncate_after_tokens") {
      ok = readInt(value, 0, 1'000'000, number);
      faults.truncate_after_tokens = static_cast<int>(number);
    } else if (key == "slowdown") {
      ok = value.get_double().get(faults.slowdown) == simdjson::SUCCESS &&
           faults.slowdown >= 0.01 && faults.slowdown <= 1000;
    } else if (key == "crash_after_requests") {
      ok = readInt(value, -1, int64_t{1} << 40, faults.crash_after_requests);
    } else if (key == "metrics_missing") {
      ok = value.get_bool().get(faults.metrics_missing) == simdjson::SUCCESS;
    } else if (key == "metrics_stale") {
      ok = value.get_bool().get(faults.metrics_stale) == simdjson::SUCCESS;
    } else if (key == "metrics_nan_kv") {
      ok = value.get_bool().get(faults.metrics_nan_kv) == simdjson::SUCCESS;
    } else {
      return {std::nullopt, fmt::format("unknown fault '{}'", key)};
    }
    if (!ok) return {std::nullopt, fmt::format("invalid value for fault '{}'", key)};
  }
  return {faults, {}};
}

std::string renderFaults(const FaultConfig& f) {
  return fmt::format(
      R"({{"error_rate":{},"error_status":{},"reset":{},"hang_before_first_byte":{},)"
      R"("stall_mid_stream_ms":{},"stall_after_tokens":{},"truncate_stream":{},)"
      R"("truncate_after_tokens":{},"slowdown":{},"crash_after_requests":{},)"
      R"("metrics_missing":{},"metrics_stale":{},"metrics_nan_kv":{}}})",
      f.error_rate, f.error_status, f.reset, f.hang, f.stall_mid_stream_ms, f.stall_after_tokens,
      f.truncate_stream, f.truncate_after_tokens, f.slowdown, f.crash_after_requests,
      f.metrics_missing, f.metrics_stale, f.metrics_nan_kv);
}

}  // namespace switchyard::engine
