// One closed interval of request monitoring for one model, as a gateway publishes it and the
// optimizer reads it, in two wire layouts (docs/optimizer.md, "Request monitoring"):
//
// Switchyard's JSON (in Redis: HSET sy:{<model>}:load:<start> <gateway-id> <json>):
//   {"model", "gateway", "start" (unix s, a multiple of interval), "interval_s",
//    "completed", "failed", "rejected", "queued",
//    "cells": [[prompt_bucket, output_bucket, count], …]}   buckets of load_shape.h
//
// AIBrix's request trace (in Redis: aibrix:<model>_request_trace_<start>, a JSON string):
//   {"<round(10·log2 prompt)>:<round(10·log2 output)>": count, …, "meta_v": 4,
//    "meta_interval_sec", "meta_precision": 10, "meta_total_reqs", "meta_pending_reqs",
//    "meta_queueing_reqs"}
// Converting keeps the counts; shapes move to the nearest bucket of the other layout.
// Errors are values; nothing throws. Off the hot path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::observe {

struct ShapeCount {
  int prompt_bucket = 0;
  int output_bucket = 0;
  uint64_t count = 0;
};

struct LoadInterval {
  std::string model;
  std::string gateway;
  int64_t start = 0;  // unix seconds
  int interval_s = 10;
  uint64_t completed = 0;
  uint64_t failed = 0;
  uint64_t rejected = 0;
  uint64_t queued = 0;  // in flight at the gateway when the interval closed
  // Requests seen but not classified: AIBrix's meta_total_reqs beyond its completed ones.
  uint64_t unclassified = 0;
  std::vector<ShapeCount> cells;

  // Adds another gateway's interval (same model and start).
  void merge(const LoadInterval& other);
  // Completed + failed + rejected: every request that asked for service in the interval.
  uint64_t demand() const { return completed + failed + rejected + unclassified; }
};

std::string loadIntervalJson(const LoadInterval& interval);
std::optional<LoadInterval> parseLoadIntervalJson(std::string_view text, std::string* error);
// A JSON array of intervals (the gateway's /debug/load).
std::optional<std::vector<LoadInterval>> parseLoadIntervalsJson(std::string_view text,
                                                                std::string* error);

std::string aibrixTraceJson(const LoadInterval& interval);
std::optional<LoadInterval> parseAibrixTrace(std::string_view text, std::string_view model,
                                             int64_t start, std::string* error);
std::string aibrixTraceKey(std::string_view model, int64_t start);
std::string switchyardLoadKey(std::string_view prefix, std::string_view model, int64_t start);

}  // namespace switchyard::observe
