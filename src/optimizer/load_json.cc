#include "optimizer/load_json.h"

#include <fmt/format.h>

#include <cmath>

#include "core/json_util.h"

namespace switchyard::optimizer {
namespace {
namespace dom = simdjson::dom;
}  // namespace

std::optional<LoadFile> parseLoadJson(std::string_view text, std::string* error) {
  auto fail = [&](std::string message) -> std::optional<LoadFile> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  dom::parser parser;
  dom::object object;
  if (std::string e; !json::parseObject(parser, text, object, &e, "the load")) {
    return fail("load: " + e);
  }
  LoadFile load;
  bool have_cells = false;
  for (auto [key, value] : object) {
    if (key == "model") {
      std::string_view model;
      if (value.get_string().get(model)) return fail("load: 'model' must be a string");
      load.model = model;
    } else if (key == "cells") {
      dom::array cells;
      if (value.get_array().get(cells)) return fail("load: 'cells' must be an array");
      have_cells = true;
      size_t index = 0;
      for (dom::element cell : cells) {
        dom::object c;
        if (cell.get_object().get(c))
          return fail(fmt::format("load: cells[{}] must be an object", index));
        LoadCell out;
        bool have_p = false, have_o = false, have_r = false;
        for (auto [ckey, cvalue] : c) {
          double v = 0;
          const bool number = json::number(cvalue, v) && std::isfinite(v);
          if (ckey == "prompt_tokens") {
            if (!number || v < 1)
              return fail(fmt::format("load: cells[{}].prompt_tokens must be >= 1", index));
            out.prompt_tokens = v;
            have_p = true;
          } else if (ckey == "output_tokens") {
            if (!number || v < 1)
              return fail(fmt::format("load: cells[{}].output_tokens must be >= 1", index));
            out.output_tokens = v;
            have_o = true;
          } else if (ckey == "rps") {
            if (!number || v < 0)
              return fail(fmt::format("load: cells[{}].rps must be >= 0", index));
            out.rps = v;
            have_r = true;
          }
        }
        if (!have_p || !have_o || !have_r) {
          return fail(
              fmt::format("load: cells[{}] needs prompt_tokens, output_tokens and rps", index));
        }
        load.cells.push_back(out);
        ++index;
      }
    }
  }
  if (!have_cells) return fail("load: missing 'cells'");
  return load;
}

std::string recommendationJson(const Recommendation& r) {
  std::string out = fmt::format("{{\"feasible\":{},\"cost\":", r.feasible ? "true" : "false");
  json::appendNumber(out, r.cost);
  out += ",\"replicas\":{";
  for (size_t d = 0; d < r.model.deployments.size(); ++d) {
    if (d) out += ',';
    json::appendString(out, r.model.deployments[d].name);
    fmt::format_to(std::back_inserter(out), ":{}", d < r.replicas.size() ? r.replicas[d] : 0);
  }
  out += "},\"solve_ms\":";
  json::appendNumber(out, std::round(r.solve_ms * 1000) / 1000);
  fmt::format_to(std::back_inserter(out), ",\"status\":\"{}\",\"timed_out\":{},\"no_load\":{}",
                 r.no_load ? "no_load" : solveStatusName(r.status), r.timed_out ? "true" : "false",
                 r.no_load ? "true" : "false");
  out += ",\"note\":";
  json::appendString(out, r.note);
  out += ",\"assignment\":{";
  for (size_t d = 0; d < r.model.deployments.size(); ++d) {
    if (d) out += ',';
    json::appendString(out, r.model.deployments[d].name);
    out += ":[";
    bool first = true;
    for (size_t c = 0; c < r.model.cells.size() && c < r.slices.size(); ++c) {
      const int slices = d < r.slices[c].size() ? r.slices[c][d] : 0;
      if (slices <= 0) continue;
      const auto& cell = r.model.cells[c];
      fmt::format_to(std::back_inserter(out),
                     "{}{{\"prompt_tokens\":{},\"output_tokens\":{},\"rps\":", first ? "" : ",",
                     cell.shape.prompt_tokens, cell.shape.output_tokens);
      json::appendNumber(out, cell.shape.rps * slices / r.model.slice_factor);
      out += '}';
      first = false;
    }
    out += ']';
  }
  out += "}}\n";
  return out;
}

}  // namespace switchyard::optimizer
