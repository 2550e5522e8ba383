// Raw sweep measurements (what `switchyard profile -o RAW.json` writes, and
// `gen-profile --emulated` produces in memory) and the step from them to a profile.
//
// RAW.json: {"format": "switchyard-profile-raw/1", "endpoint", "model", "created",
//            "cells": [{"prompt_tokens", "output_tokens", "done", "steps": [Step…]}]}
// A cell with done=false was interrupted (time budget, Ctrl-C): a resumed sweep runs it again.
//
// buildProfile(): the grid is every distinct prompt and output length among the cells; per cell
// tputs = the highest offered rate whose step met the SLO at the chosen percentile and was
// served (achieved >= 0.9 × offered), 0 when none did; the e2e/ttft/tpot matrices hold that
// step's means (or, with no qualifying step, the lowest-rate step's, as AIBrix does). All steps
// are kept. A grid point with no measured cell gets rate 0 and no steps.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"

namespace switchyard::profile {

struct RawCell {
  int prompt_tokens = 0;
  int output_tokens = 0;
  bool done = false;
  std::vector<Step> steps;
};

struct RawMeasurements {
  std::string endpoint;
  std::string model;
  double created = 0;
  std::vector<RawCell> cells;

  RawCell* find(int prompt_tokens, int output_tokens);
};

std::string rawToJson(const RawMeasurements& raw);
std::optional<RawMeasurements> parseRawJson(std::string_view text, std::string* error);

struct ProfileLabels {
  std::string deployment;
  std::string gpu;
  std::string model;  // empty: the raw file's
  double cost = 1;
  double created = 0;  // unix seconds
};

GpuProfile buildProfile(const RawMeasurements& raw, const ProfileLabels& labels, const Slo& slo);

// The step of a cell that sets its rate: highest offered rate meeting `slo` and served; nullptr
// when none.
const Step* qualifyingStep(const std::vector<Step>& steps, const Slo& slo);

// "128,512,2048" → {128, 512, 2048}; empty optional when malformed (values must be >= 1).
std::optional<std::vector<int>> parseTokenList(std::string_view text);
// "0.5,1,2.5" → rates > 0.
std::optional<std::vector<double>> parseRateList(std::string_view text);

}  // namespace switchyard::profile
