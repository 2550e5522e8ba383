// The load file of `switchyard optimize --once`:
//   {"model": "M", "cells": [{"prompt_tokens": P, "output_tokens": O, "rps": R}, …]}
// and the answer it prints:
//   {"feasible": true, "cost": C, "replicas": {"deployment": n, …}, "solve_ms": T, …}
// Errors are values naming the field; never throws. Off the hot path.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optimizer/optimizer.h"

namespace switchyard::optimizer {

struct LoadFile {
  std::string model;
  std::vector<LoadCell> cells;
};

std::optional<LoadFile> parseLoadJson(std::string_view text, std::string* error);

// The --once answer: feasible, cost, replicas (by deployment name), solve_ms, plus status,
// timed_out, no_load, note and, per deployment, the cells it serves.
std::string recommendationJson(const Recommendation& r);

}  // namespace switchyard::optimizer
