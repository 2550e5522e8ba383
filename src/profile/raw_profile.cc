#include "profile/raw_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/json_util.h"
#include "profile/profile_json.h"

namespace switchyard::profile {
namespace {

namespace dom = simdjson::dom;

template <typename T, typename Convert>
std::optional<std::vector<T>> parseList(std::string_view text, Convert convert) {
  std::vector<T> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string part(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || !std::isfinite(v)) return std::nullopt;
    std::optional<T> value = convert(v);
    if (!value) return std::nullopt;
    out.push_back(*value);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

RawCell* RawMeasurements::find(int prompt_tokens, int output_tokens) {
  for (RawCell& c : cells) {
    if (c.prompt_tokens == prompt_tokens && c.output_tokens == output_tokens) return &c;
  }
  return nullptr;
}

std::string rawToJson(const RawMeasurements& raw) {
  std::string out = "{";
  json::appendField(out, "format", "switchyard-profile-raw/1");
  json::appendField(out, "endpoint", raw.endpoint);
  json::appendField(out, "model", raw.model);
  json::appendField(out, "created", raw.created);
  out += ",\"cells\":[";
  for (size_t i = 0; i < raw.cells.size(); ++i) {
    const RawCell& c = raw.cells[i];
    fmt::format_to(std::back_inserter(out),
                   "{}\n{{\"prompt_tokens\":{},\"output_tokens\":{},\"done\":{},\"steps\":",
                   i ? "," : "", c.prompt_tokens, c.output_tokens, c.done ? "true" : "false");
    appendStepsJson(out, c.steps);
    out += "}";
  }
  out += "]}\n";
  return out;
}

std::optional<RawMeasurements> parseRawJson(std::string_view text, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<RawMeasurements> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  dom::parser parser;
  dom::object object;
  if (!json::parseObject(parser, text, object, error, "raw measurements")) return std::nullopt;
  RawMeasurements raw;
  bool have_cells = false;
  for (auto [key, value] : object) {
    std::string_view s;
    if (key == "endpoint" && value.get_string().get(s) == simdjson::SUCCESS) {
      raw.endpoint = s;
    } else if (key == "model" && value.get_string().get(s) == simdjson::SUCCESS) {
      raw.model = s;
    } else if (key == "created") {
      json::number(value, raw.created);
    } else if (key == "cells") {
      dom::array cells;
      if (value.get_array().get(cells)) return fail("'cells' must be an array");
      have_cells = true;
      for (dom::element cell : cells) {
        dom::object c;
        if (cell.get_object().get(c)) return fail("a cell must be an object");
        RawCell out;
        double number = 0;
        for (auto [ckey, cvalue] : c) {
          if (ckey == "prompt_tokens" || ckey == "output_tokens") {
            if (!json::number(cvalue, number) || number < 1 || number > 1e8) {
              return fail(fmt::format("cell {} must be a count >= 1", std::string_view(ckey)));
            }
            (ckey == "prompt_tokens" ? out.prompt_tokens : out.output_tokens) =
                static_cast<int>(std::lround(number));
          } else if (ckey == "done") {
            bool done = false;
            if (cvalue.get_bool().get(done)) return fail("cell 'done' must be a boolean");
            out.done = done;
          } else if (ckey == "steps") {
            dom::array steps;
            if (cvalue.get_array().get(steps)) return fail("cell 'steps' must be an array");
            for (dom::element step : steps) {
              std::string step_error;
              if (!parseStepJson(step, out.steps.emplace_back(), &step_error)) {
                return fail("cell steps: " + step_error);
              }
            }
          }
        }
        if (out.prompt_tokens < 1 || out.output_tokens < 1) {
          return fail("a cell needs prompt_tokens and output_tokens");
        }
        raw.cells.push_back(std::move(out));
      }
    }
  }
  if (!have_cells) return fail("missing 'cells'");
  return raw;
}

const Step* qualifyingStep(const std::vector<Step>& steps, const Slo& slo) {
  const Step* best = nullptr;
  for (const Step& s : steps) {
    if (s.requests <= 0 || !served(s) || !slo.metBy(s)) {
      continue;
    }
    if (best == nullptr || s.offered_rps > best->offered_rps) best = &s;
  }
  return best;
}

GpuProfile buildProfile(const RawMeasurements& raw, const ProfileLabels& labels, const Slo& slo) {
  GpuProfile p;
  p.deployment = labels.deployment;
  p.gpu = labels.gpu.empty() ? labels.deployment : labels.gpu;
  p.model = labels.model.empty() ? raw.model : labels.model;
  p.cost = labels.cost;
  p.created = labels.created;
  p.slo = slo;
  std::set<int> prompts, outputs;
  for (const RawCell& c : raw.cells) {
    prompts.insert(c.prompt_tokens);
    outputs.insert(c.output_tokens);
  }
  p.prompts.assign(prompts.begin(), prompts.end());
  p.outputs.assign(outputs.begin(), outputs.end());
  const size_t rows = p.outputs.size();
  const size_t cols = p.prompts.size();
  p.tputs.assign(rows, std::vector<double>(cols, 0));
  p.e2e.assign(rows, std::vector<double>(cols, 0));
  p.ttft.assign(rows, std::vector<double>(cols, 0));
  p.tpot.assign(rows, std::vector<double>(cols, 0));
  p.steps.assign(rows, std::vector<std::vector<Step>>(cols));
  for (const RawCell& c : raw.cells) {
    const size_t o = static_cast<size_t>(
        std::lower_bound(p.outputs.begin(), p.outputs.end(), c.output_tokens) - p.outputs.begin());
    const size_t i = static_cast<size_t>(
        std::lower_bound(p.prompts.begin(), p.prompts.end(), c.prompt_tokens) - p.prompts.begin());
    std::vector<Step> steps = c.steps;
    std::sort(steps.begin(), steps.end(),
              [](const Step& a, const Step& b) { return a.offered_rps < b.offered_rps; });
    p.steps[o][i] = steps;
    const Step* chosen = qualifyingStep(steps, slo);
    if (chosen != nullptr) p.tputs[o][i] = chosen->offered_rps;
    const Step* shown = chosen != nullptr ? chosen : (steps.empty() ? nullptr : &steps.front());
    if (shown != nullptr) {
      p.e2e[o][i] = shown->e2e.mean;
      p.ttft[o][i] = shown->ttft.mean;
      p.tpot[o][i] = shown->tpot.mean;
    }
  }
  p.index();
  return p;
}

std::optional<std::vector<int>> parseTokenList(std::string_view text) {
  return parseList<int>(text, [](double v) -> std::optional<int> {
    if (v < 1 || v > 1e7 || v != std::floor(v)) return std::nullopt;
    return static_cast<int>(v);
  });
}

std::optional<std::vector<double>> parseRateList(std::string_view text) {
  return parseList<double>(text, [](double v) -> std::optional<double> {
    if (!(v > 0) || v > 1e6) return std::nullopt;
    return v;
  });
}

}  // namespace switchyard::profile
