#include "observe/load_interval.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "core/json_util.h"
#include "observe/load_shape.h"

namespace switchyard::observe {
namespace {

namespace dom = simdjson::dom;

bool readCount(dom::element e, uint64_t& out) {
  double v = 0;
  if (e.get_double().get(v) || !std::isfinite(v) || v < 0 || v > 1e15) return false;
  out = static_cast<uint64_t>(std::llround(v));
  return true;
}

std::optional<LoadInterval> fromObject(dom::object object, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<LoadInterval> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  LoadInterval out;
  for (auto [key, value] : object) {
    std::string_view text;
    uint64_t n = 0;
    if (key == "model" || key == "gateway") {
      if (value.get_string().get(text))
        return fail(fmt::format("'{}' must be a string", std::string_view(key)));
      (key == "model" ? out.model : out.gateway) = text;
    } else if (key == "start" || key == "interval_s" || key == "completed" || key == "failed" ||
               key == "rejected" || key == "queued") {
      if (!readCount(value, n))
        return fail(fmt::format("'{}' must be a count", std::string_view(key)));
      if (key == "start")
        out.start = static_cast<int64_t>(n);
      else if (key == "interval_s")
        out.interval_s = static_cast<int>(std::min<uint64_t>(n, 86400));
      else if (key == "completed")
        out.completed = n;
      else if (key == "failed")
        out.failed = n;
      else if (key == "rejected")
        out.rejected = n;
      else
        out.queued = n;
    } else if (key == "cells") {
      dom::array cells;
      if (value.get_array().get(cells)) return fail("'cells' must be an array");
      for (dom::element cell : cells) {
        dom::array triple;
        if (cell.get_array().get(triple) || triple.size() != 3) {
          return fail("a cell must be [prompt_bucket, output_bucket, count]");
        }
        uint64_t p = 0, o = 0, c = 0;
        if (!readCount(triple.at(0), p) || !readCount(triple.at(1), o) ||
            !readCount(triple.at(2), c) ||
            !tokenBucketExists(static_cast<int64_t>(p), kPromptBuckets) ||
            !tokenBucketExists(static_cast<int64_t>(o), kOutputBuckets)) {
          return fail("a cell's buckets or count are out of range");
        }
        out.cells.push_back({static_cast<int>(p), static_cast<int>(o), c});
      }
    }
  }
  if (out.interval_s < 1) return fail("'interval_s' must be >= 1");
  return out;
}

}  // namespace

void LoadInterval::merge(const LoadInterval& other) {
  completed += other.completed;
  failed += other.failed;
  rejected += other.rejected;
  queued += other.queued;
  unclassified += other.unclassified;
  std::map<std::pair<int, int>, uint64_t> sum;
  for (const ShapeCount& c : cells) sum[{c.prompt_bucket, c.output_bucket}] += c.count;
  for (const ShapeCount& c : other.cells) sum[{c.prompt_bucket, c.output_bucket}] += c.count;
  cells.clear();
  for (const auto& [key, count] : sum) cells.push_back({key.first, key.second, count});
}

std::string loadIntervalJson(const LoadInterval& i) {
  std::string out = "{";
  json::appendField(out, "model", i.model);
  json::appendField(out, "gateway", i.gateway);
  fmt::format_to(std::back_inserter(out),
                 ",\"start\":{},\"interval_s\":{},\"completed\":{},\"failed\":{},\"rejected\":{},"
                 "\"queued\":{},\"cells\":[",
                 i.start, i.interval_s, i.completed, i.failed, i.rejected, i.queued);
  for (size_t k = 0; k < i.cells.size(); ++k) {
    fmt::format_to(std::back_inserter(out), "{}[{},{},{}]", k ? "," : "", i.cells[k].prompt_bucket,
                   i.cells[k].output_bucket, i.cells[k].count);
  }
  out += "]}";
  return out;
}

std::optional<LoadInterval> parseLoadIntervalJson(std::string_view text, std::string* error) {
  dom::parser parser;
  dom::object object;
  if (!json::parseObject(parser, text, object, error, "a load interval")) return std::nullopt;
  return fromObject(object, error);
}

std::optional<std::vector<LoadInterval>> parseLoadIntervalsJson(std::string_view text,
                                                                std::string* error) {
  dom::parser parser;
  dom::element root;
  if (!json::parseRoot(parser, text, root, error)) return std::nullopt;
  dom::array array;
  if (root.get_array().get(array)) {
    if (error) *error = "expected a JSON array of load intervals";
    return std::nullopt;
  }
  std::vector<LoadInterval> out;
  for (dom::element e : array) {
    dom::object object;
    if (e.get_object().get(object)) {
      if (error) *error = "a load interval must be a JSON object";
      return std::nullopt;
    }
    auto interval = fromObject(object, error);
    if (!interval) return std::nullopt;
    out.push_back(std::move(*interval));
  }
  return out;
}

std::string aibrixTraceJson(const LoadInterval& i) {
  std::map<std::string, uint64_t> keys;
  for (const ShapeCount& c : i.cells) {
    const long p = std::lround(10 * std::log2(bucketTokens(c.prompt_bucket)));
    const long o = std::lround(10 * std::log2(bucketTokens(c.output_bucket)));
    keys[fmt::format("{}:{}", p, o)] += c.count;
  }
  std::string out = "{";
  for (const auto& [key, count] : keys)
    fmt::format_to(std::back_inserter(out), "\"{}\":{},", key, count);
  fmt::format_to(std::back_inserter(out),
                 "\"meta_v\":4,\"meta_interval_sec\":{},\"meta_precision\":10,"
                 "\"meta_total_reqs\":{},\"meta_pending_reqs\":{},\"meta_queueing_reqs\":0}}",
                 i.interval_s, i.demand(), i.queued);
  return out;
}

std::optional<LoadInterval> parseAibrixTrace(std::string_view text, std::string_view model,
                                             int64_t start, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<LoadInterval> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  dom::parser parser;
  dom::object object;
  if (!json::parseObject(parser, text, object, error, "an AIBrix trace")) return std::nullopt;
  LoadInterval out;
  out.model = model;
  out.start = start;
  double precision = 1;  // meta_v 1 has no meta_precision: whole log2 steps
  uint64_t total = 0;
  bool have_total = false;
  std::vector<std::tuple<long, long, uint64_t>> entries;
  for (auto [key_view, value] : object) {
    const std::string_view key = key_view;
    uint64_t n = 0;
    if (!readCount(value, n)) return fail(fmt::format("'{}' must be a count", key));
    if (key == "meta_precision") {
      precision = std::max<double>(1, static_cast<double>(n));
    } else if (key == "meta_interval_sec") {
      out.interval_s = static_cast<int>(std::clamp<uint64_t>(n, 1, 86400));
    } else if (key == "meta_total_reqs") {
      total = n;
      have_total = true;
    } else if (key == "meta_pending_reqs") {
      out.queued = n;
    } else if (key.starts_with("meta_")) {
      continue;
    } else {
      long p = 0, o = 0;
      int used = 0;
      const std::string k(key);
      if (std::sscanf(k.c_str(), "%ld:%ld%n", &p, &o, &used) != 2 ||
          used != static_cast<int>(k.size()) || p < 0 || o < 0 || p > 400 || o > 400) {
        return fail(fmt::format("unexpected trace key '{}', expected \"int:int\"", key));
      }
      entries.emplace_back(p, o, n);
    }
  }
  std::map<std::pair<int, int>, uint64_t> sum;
  for (const auto& [p, o, n] : entries) {
    const auto tokens = [&](long index) {
      const double log2_tokens = std::min(40.0, static_cast<double>(index) / precision);
      return static_cast<int64_t>(std::llround(std::exp2(log2_tokens)));
    };
    sum[{tokenBucket(tokens(p), kPromptBuckets), tokenBucket(tokens(o), kOutputBuckets)}] += n;
    out.completed += n;
  }
  for (const auto& [key, n] : sum) out.cells.push_back({key.first, key.second, n});
  // AIBrix counts every request in meta_total_reqs; what did not complete is not told apart.
  if (have_total && total > out.completed) out.unclassified = total - out.completed;
  return out;
}

std::string aibrixTraceKey(std::string_view model, int64_t start) {
  return fmt::format("aibrix:{}_request_trace_{}", model, start);
}

std::string switchyardLoadKey(std::string_view prefix, std::string_view model, int64_t start) {
  return fmt::format("{}:{{{}}}:load:{}", prefix, model, start);
}

}  // namespace switchyard::observe
