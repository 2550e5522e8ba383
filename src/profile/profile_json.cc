#include "profile/profile_json.h"

#include <fmt/format.h>

#include <cmath>

namespace switchyard::profile {
namespace {

namespace dom = simdjson::dom;

bool parseLatency(dom::element e, Latency& out) {
  dom::object object;
  if (e.get_object().get(object)) return false;
  for (auto [key, value] : object) {
    double v = 0;
    if (!json::number(value, v) || !std::isfinite(v) || v < 0) return false;
    if (key == "mean")
      out.mean = v;
    else if (key == "p50")
      out.p50 = v;
    else if (key == "p90")
      out.p90 = v;
    else if (key == "p99")
      out.p99 = v;
  }
  return true;
}

void appendLatency(std::string& out, std::string_view key, const Latency& l) {
  json::appendString(out, key);
  out += ":{";
  json::appendField(out, "mean", l.mean);
  json::appendField(out, "p50", l.p50);
  json::appendField(out, "p90", l.p90);
  json::appendField(out, "p99", l.p99);
  out += '}';
}

bool toGrid(const std::vector<double>& values, std::vector<int>& out) {
  out.clear();
  for (double v : values) {
    if (!std::isfinite(v) || v < 0.5 || v > 1e9) return false;
    out.push_back(static_cast<int>(std::lround(v)));
  }
  return true;
}

}  // namespace

bool parseStepJson(dom::element element, Step& step, std::string* error) {
  dom::object object;
  if (element.get_object().get(object)) {
    if (error) *error = "a step must be an object";
    return false;
  }
  for (auto [key, value] : object) {
    double v = 0;
    bool ok = true;
    if (key == "ttft")
      ok = parseLatency(value, step.ttft);
    else if (key == "tpot")
      ok = parseLatency(value, step.tpot);
    else if (key == "e2e")
      ok = parseLatency(value, step.e2e);
    else if (key == "offered_rps")
      ok = json::number(value, step.offered_rps);
    else if (key == "achieved_rps")
      ok = json::number(value, step.achieved_rps);
    else if (key == "arrival_rps")
      ok = json::number(value, step.arrival_rps);
    else if (key == "output_tokens_per_s")
      ok = json::number(value, step.output_tokens_per_s);
    else if (key == "mean_concurrency")
      ok = json::number(value, step.mean_concurrency);
    else if (key == "requests") {
      ok = json::number(value, v) && v >= 0 && v < 1e9;
      if (ok) step.requests = static_cast<int>(v);  // converted only once known to fit
    } else if (key == "failed") {
      ok = json::number(value, v) && v >= 0 && v < 1e9;
      if (ok) step.failed = static_cast<int>(v);
    }
    if (!ok) {
      if (error) *error = fmt::format("step field '{}' is malformed", std::string_view(key));
      return false;
    }
  }
  for (double v : {step.offered_rps, step.arrival_rps, step.achieved_rps, step.output_tokens_per_s,
                   step.mean_concurrency}) {
    if (!std::isfinite(v) || v < 0) {
      if (error) *error = "a step has a negative or non-finite figure";
      return false;
    }
  }
  return true;
}

void appendStepJson(std::string& out, const Step& s) {
  out += '{';
  json::appendField(out, "offered_rps", s.offered_rps);
  json::appendField(out, "arrival_rps", s.arrival_rps);
  json::appendField(out, "achieved_rps", s.achieved_rps);
  json::appendField(out, "output_tokens_per_s", s.output_tokens_per_s);
  json::appendField(out, "mean_concurrency", s.mean_concurrency);
  json::appendField(out, "requests", s.requests);
  json::appendField(out, "failed", s.failed);
  for (auto [key, latency] :
       {std::pair{"ttft", &s.ttft}, std::pair{"tpot", &s.tpot}, std::pair{"e2e", &s.e2e}}) {
    out += ',';
    appendLatency(out, key, *latency);
  }
  out += '}';
}

void appendStepsJson(std::string& out, const std::vector<Step>& steps) {
  out += '[';
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i) out += ',';
    appendStepJson(out, steps[i]);
  }
  out += ']';
}

ProfileParse parseProfileJson(std::string_view text) {
  ProfileParse result;
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };
  dom::parser parser;
  dom::object object;
  if (std::string error; !json::parseObject(parser, text, object, &error, "a profile")) {
    return fail(std::move(error));
  }
  GpuProfile p;
  bool have_tputs = false;
  bool have_indexes = false;
  for (auto [key_view, value] : object) {
    const std::string_view key = key_view;
    bool ok = true;
    std::string_view text_value;
    if (key == "gpu") {
      ok = value.get_string().get(text_value) == simdjson::SUCCESS;
      p.gpu = text_value;
    } else if (key == "deployment") {
      ok = value.get_string().get(text_value) == simdjson::SUCCESS;
      p.deployment = text_value;
    } else if (key == "model") {
      ok = value.get_string().get(text_value) == simdjson::SUCCESS;
      p.model = text_value;
    } else if (key == "cost") {
      ok = json::number(value, p.cost);
    } else if (key == "created") {
      ok = json::number(value, p.created);
    } else if (key == "tputs") {
      ok = json::matrix(value, p.tputs);
      have_tputs = ok;
    } else if (key == "e2e") {
      ok = json::matrix(value, p.e2e);
    } else if (key == "ttft") {
      ok = json::matrix(value, p.ttft);
    } else if (key == "tpot") {
      ok = json::matrix(value, p.tpot);
    } else if (key == "indexes") {
      std::vector<std::vector<double>> indexes;
      ok = json::matrix(value, indexes) && indexes.size() == 2 && toGrid(indexes[0], p.outputs) &&
           toGrid(indexes[1], p.prompts);
      have_indexes = ok;
    } else if (key == "slos") {
      dom::object slos;
      ok = value.get_object().get(slos) == simdjson::SUCCESS;
      if (ok) {
        for (auto [slo_key, slo_value] : slos) {
          double v = 0;
          if (!json::number(slo_value, v) || !std::isfinite(v)) {
            return fail(fmt::format("slos.{} must be a number", std::string_view(slo_key)));
          }
          // AIBrix writes unset time SLOs as absent; a 0 or inf limit means "none" too.
          const double limit = v > 0 && v < 1e12 ? v : 0;
          if (slo_key == "percentile") {
            // Outside int's range the conversion is undefined; validation refuses what is left.
            if (v < 0 || v > 100) {
              return fail(fmt::format("slos.percentile {} must be 0, 50, 90 or 99", v));
            }
            p.slo.percentile = static_cast<int>(v);
          } else if (slo_key == "ttft") {
            p.slo.ttft = limit;
          } else if (slo_key == "tpot") {
            p.slo.tpot = limit;
          } else if (slo_key == "e2e") {
            p.slo.e2e = limit;
          }
        }
      }
    } else if (key == "steps") {
      dom::array rows;
      // A failed get leaves `rows` without a document: it must not be iterated.
      if (value.get_array().get(rows)) return fail("field 'steps' is malformed");
      for (dom::element row : rows) {
        dom::array cells;
        if (!ok || row.get_array().get(cells)) {
          ok = false;
          break;
        }
        auto& out_row = p.steps.emplace_back();
        for (dom::element cell : cells) {
          dom::array list;
          if (cell.get_array().get(list)) {
            ok = false;
            break;
          }
          auto& out_cell = out_row.emplace_back();
          for (dom::element step : list) {
            std::string error;
            if (!parseStepJson(step, out_cell.emplace_back(), &error))
              return fail("steps: " + error);
          }
        }
      }
    }
    if (!ok) return fail(fmt::format("field '{}' is malformed", key));
  }
  if (!have_tputs) return fail("missing 'tputs'");
  if (!have_indexes)
    return fail("missing or malformed 'indexes' ([[output lengths], [prompt lengths]])");
  if (p.deployment.empty()) p.deployment = p.gpu;
  if (p.gpu.empty()) p.gpu = p.deployment;
  if (p.deployment.empty()) return fail("missing 'gpu' (and 'deployment')");
  if (std::string error = p.validate(); !error.empty()) return fail(error);
  p.index();
  result.profile = std::move(p);
  return result;
}

std::string profileToJson(const GpuProfile& p) {
  std::string out = "{";
  json::appendField(out, "format", "switchyard-profile/1");
  json::appendField(out, "gpu", p.gpu);
  json::appendField(out, "deployment", p.deployment);
  json::appendField(out, "model", p.model);
  json::appendField(out, "cost", p.cost);
  json::appendField(out, "created", p.created);
  fmt::format_to(std::back_inserter(out), ",\"slos\":{{\"percentile\":{}", p.slo.percentile);
  for (auto [name, value] : {std::pair{"ttft", p.slo.ttft}, std::pair{"tpot", p.slo.tpot},
                             std::pair{"e2e", p.slo.e2e}}) {
    if (value <= 0) continue;
    fmt::format_to(std::back_inserter(out), ",\"{}\":", name);
    json::appendNumber(out, value);
  }
  out += "},\"indexes\":[";
  json::appendNumbers(out, std::vector<double>(p.outputs.begin(), p.outputs.end()));
  out += ',';
  json::appendNumbers(out, std::vector<double>(p.prompts.begin(), p.prompts.end()));
  out += "],\"tputs\":";
  json::appendMatrix(out, p.tputs);
  for (auto [name, m] :
       {std::pair{"e2e", &p.e2e}, std::pair{"ttft", &p.ttft}, std::pair{"tpot", &p.tpot}}) {
    if (m->empty()) continue;
    fmt::format_to(std::back_inserter(out), ",\"{}\":", name);
    json::appendMatrix(out, *m);
  }
  if (!p.steps.empty()) {
    out += ",\"steps\":[";
    for (size_t o = 0; o < p.steps.size(); ++o) {
      if (o) out += ',';
      out += '[';
      for (size_t i = 0; i < p.steps[o].size(); ++i) {
        if (i) out += ',';
        appendStepsJson(out, p.steps[o][i]);
      }
      out += ']';
    }
    out += ']';
  }
  out += "}\n";
  return out;
}

}  // namespace switchyard::profile
