#include "observe/decision_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "api/openai_error.h"
#include "observe/metrics.h"

namespace switchyard::observe {
namespace {

template <size_t N>
void copyTruncated(char (&dst)[N], std::string_view src) {
  const size_t n = std::min(src.size(), N - 1);
  if (n > 0) std::memcpy(dst, src.data(), n);  // an empty view may have no data pointer
  dst[n] = '\0';
}

void appendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  api::appendJsonEscaped(out, s);
  out.push_back('"');
}

void appendScore(std::string& out, double score) {
  if (std::isfinite(score)) {
    fmt::format_to(std::back_inserter(out), "{:.4g}", score);
  } else {
    out.append(score > 0 ? "inf" : "-inf");
  }
}

}  // namespace

std::string_view inflightAdmissionName(InflightAdmission how) {
  switch (how) {
    case InflightAdmission::kNone: return "none";
    case InflightAdmission::kLeasedSlot: return "leased_slot";
    case InflightAdmission::kNewLease: return "new_lease";
    case InflightAdmission::kShared: return "shared";
    case InflightAdmission::kLocalShare: return "local_share";
  }
  return "none";
}

void fillDecisionRecord(DecisionRecord& record, const routing::Decision& decision,
                        std::span<const uint32_t> replica_slots, uint32_t model_slot,
                        std::string_view request_id, int64_t unix_ns, int64_t latency_ns,
                        int attempt) {
  record.unix_ns = unix_ns;
  record.latency_ns = latency_ns;
  record.model_slot = model_slot;
  record.chosen_slot =
      decision.chosen >= 0 && static_cast<size_t>(decision.chosen) < replica_slots.size()
          ? static_cast<int32_t>(replica_slots[decision.chosen])
          : -1;
  record.attempt = static_cast<uint16_t>(attempt);
  record.total_rows = static_cast<uint16_t>(decision.rows.size());
  record.ready = static_cast<uint16_t>(decision.ready);
  record.sampled = static_cast<uint16_t>(decision.sampled);
  record.candidates = static_cast<uint16_t>(decision.candidates);
  record.pick_set = static_cast<uint16_t>(decision.pick_set);
  record.relaxed = decision.relaxed;
  record.affinity = decision.affinity;
  record.hold = decision.hold;
  record.slo = decision.slo != nullptr;
  if (decision.slo != nullptr) {
    record.slo_percentile = static_cast<uint8_t>(decision.slo->percentile);
    record.slo_ttft_ms = static_cast<float>(decision.slo->ttft * 1e3);
    record.slo_tpot_ms = static_cast<float>(decision.slo->tpot * 1e3);
    record.slo_e2e_ms = static_cast<float>(decision.slo->e2e * 1e3);
  }
  record.slo_fallback = decision.slo_fallback;
  record.prefix_block_tokens = static_cast<uint16_t>(decision.prefix_block_tokens);
  record.prefix_total_blocks = decision.prefix_total_blocks;
  copyTruncated(record.request_id, request_id);
  copyTruncated(record.strategy, decision.strategy);
  // Keep the chosen row, then the rest in fleet order up to the limit.
  size_t n = 0;
  auto add = [&](const routing::CandidateRow& row) {
    if (row.replica_index >= replica_slots.size()) return;
    record.rows[n++] = {replica_slots[row.replica_index],
                        static_cast<uint8_t>(row.excluded),
                        row.in_pick_set,
                        static_cast<uint8_t>(row.passed_over),
                        row.score,
                        row.synthetic_load,
                        row.predicted_ttft,
                        row.predicted_tpot,
                        row.cost_per_request,
                        row.prefix_blocks,
                        row.prefix_exact,
                        row.prefix_home};
  };
  const routing::CandidateRow* chosen = decision.rowOf(decision.chosen);
  if (chosen != nullptr) add(*chosen);
  for (size_t i = 0; i < decision.rows.size() && n < DecisionRecord::kMaxRows; ++i) {
    if (&decision.rows[i] == chosen) continue;
    add(decision.rows[i]);
  }
  record.row_count = static_cast<uint16_t>(n);
}

std::vector<DecisionRecord> DecisionRing::copyNewest(size_t limit) const {
  std::vector<DecisionRecord> out;
  const uint64_t count = std::min<uint64_t>({written_, slots_.size(), limit});
  out.reserve(count);
  for (uint64_t i = written_ - count; i < written_; ++i) out.push_back(slots_[i % slots_.size()]);
  return out;
}

std::string renderDecisionsJson(std::vector<DecisionRecord> records,
                                const MetricsRegistry& names, size_t limit,
                                const fleet::FleetSnapshot* labels_from) {
  std::sort(records.begin(), records.end(), [](const DecisionRecord& a, const DecisionRecord& b) {
    return a.unix_ns > b.unix_ns;
  });
  if (records.size() > limit) records.resize(limit);
  std::string out = R"({"decisions":[)";
  for (size_t i = 0; i < records.size(); ++i) {
    const DecisionRecord& r = records[i];
    if (i) out.push_back(',');
    fmt::format_to(std::back_inserter(out), R"({{"time_unix_ms":{},"latency_us":{:.3f},)",
                   r.unix_ns / 1'000'000, static_cast<double>(r.latency_ns) / 1e3);
    out.append(R"("request_id":)");
    appendJsonString(out, r.request_id);
    if (r.key_name[0] != '\0') {
      out.append(R"(,"key":)");
      appendJsonString(out, r.key_name);
    }
    out.append(R"(,"model":)");
    appendJsonString(out, names.modelName(r.model_slot));
    out.append(R"(,"strategy":)");
    appendJsonString(out, r.strategy);
    out.append(R"(,"chosen":)");
    if (r.chosen_slot < 0) {
      out.append("null");
    } else {
      const auto [model_name, replica_name] =
          names.replicaName(static_cast<uint32_t>(r.chosen_slot));
      appendJsonString(out, replica_name);
      const fleet::ModelEntry* model = labels_from ? labels_from->findModel(model_name) : nullptr;
      const int index = model ? model->replicaIndex(replica_name) : -1;
      if (index >= 0) {
        out.append(R"(,"chosen_labels":{)");
        bool first = true;
        for (const auto& [key, value] : model->replicas[static_cast<size_t>(index)].labels) {
          if (!first) out.push_back(',');
          first = false;
          appendJsonString(out, key);
          out.push_back(':');
          appendJsonString(out, value);
        }
        out.push_back('}');
      }
    }
    fmt::format_to(std::back_inserter(out),
                   R"(,"worker":{},"attempt":{},"replicas":{},"sampled":{},"candidates_count":{},)"
                   R"("relaxed":{},"affinity":{},"pick_set":{},"truncated":{},)",
                   r.worker, r.attempt, r.ready, r.sampled, r.candidates, r.relaxed, r.affinity,
                   r.pick_set, r.total_rows > r.row_count);
    if (r.client_cancelled != 0) {
      fmt::format_to(std::back_inserter(out), R"("client_cancelled":"{}",)",
                     cancelStageName(static_cast<CancelStage>(r.client_cancelled)));
    }
    if (r.queued_ms >= 0 || r.deadline_ms >= 0 || r.predicted_ms >= 0 || r.refused != 0xFF ||
        r.inflight != 0) {
      fmt::format_to(std::back_inserter(out),
                     R"("admission":{{"queued_ms":{},"deadline_ms":{},"predicted_ms":{},)",
                     r.queued_ms, r.deadline_ms, r.predicted_ms);
      if (r.inflight != 0) {
        fmt::format_to(std::back_inserter(out), R"("inflight":"{}",)",
                       inflightAdmissionName(static_cast<InflightAdmission>(r.inflight)));
      }
      if (r.refused != 0xFF) {
        fmt::format_to(std::back_inserter(out), R"("refused":"{}"}},)",
                       limitName(static_cast<LimitKind>(r.refused)));
      } else {
        out.append(R"("refused":null},)");
      }
    }
    if (r.slo || r.hold || r.slo_fallback) {
      fmt::format_to(std::back_inserter(out),
                     R"("slo":{{"objective":{{"ttft_ms":{:g},"tpot_ms":{:g},"e2e_ms":{:g}}},)"
                     R"("percentile":{},"hold":{},"fallback":"{}"}},)",
                     r.slo_ttft_ms, r.slo_tpot_ms, r.slo_e2e_ms, r.slo_percentile, r.hold,
                     r.slo_fallback ? "load-balance" : "none");
    }
    if (r.prefix_block_tokens > 0) {
      fmt::format_to(std::back_inserter(out),
                     R"("prefix":{{"block_tokens":{},"prompt_blocks":{}}},)",
                     r.prefix_block_tokens, r.prefix_total_blocks);
    }
    out.append(R"("candidates":[)");
    for (size_t j = 0; j < r.row_count; ++j) {
      const DecisionRecord::Row& row = r.rows[j];
      if (j) out.push_back(',');
      out.append(R"({"replica":)");
      appendJsonString(out, names.replicaName(row.replica_slot).second);
      if (row.excluded != 0) {
        out.append(R"(,"excluded":)");
        appendJsonString(out, routing::exclusionName(static_cast<routing::Exclusion>(row.excluded)));
      } else {
        out.append(R"(,"score":)");
        if (std::isfinite(row.score)) {
          fmt::format_to(std::back_inserter(out), "{}", row.score);
        } else {
          out.append("null");  // +Inf: "pass over"
        }
        if (row.synthetic_load > 0) {
          fmt::format_to(std::back_inserter(out), R"(,"synthetic_load":{})", row.synthetic_load);
        }
        if (row.in_pick_set) out.append(R"(,"in_pick_set":true)");
        if (row.passed_over != 0) {
          out.append(R"(,"passed_over":)");
          appendJsonString(out,
                           routing::passOverName(static_cast<routing::PassOver>(row.passed_over)));
        }
        if (row.predicted_tpot >= 0) {
          fmt::format_to(std::back_inserter(out),
                         R"(,"predicted_ttft_ms":{:.1f},"predicted_tpot_ms":{:.2f})",
                         row.predicted_ttft * 1e3, row.predicted_tpot * 1e3);
        }
        if (std::isfinite(row.cost_per_request) && row.cost_per_request >= 0) {
          fmt::format_to(std::back_inserter(out), R"(,"cost_per_request":{:.3g})",
                         row.cost_per_request);
        } else if (std::isinf(row.cost_per_request)) {
          out.append(R"(,"cost_per_request":null)");  // the profile promises no rate here
        }
        if (row.prefix_blocks >= 0) {
          fmt::format_to(std::back_inserter(out),
                         R"(,"prefix_match_blocks":{},"prefix_match_tokens":{})",
                         row.prefix_blocks,
                         static_cast<int64_t>(row.prefix_blocks) * r.prefix_block_tokens);
          out.append(row.prefix_exact ? R"(,"prefix_match_source":"exact")"
                                      : R"(,"prefix_match_source":"approximate")");
          if (row.prefix_home) out.append(R"(,"prefix_home":true)");
        }
      }
      out.push_back('}');
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

void appendDecisionHeader(std::string& out, const routing::Decision& decision,
                          const fleet::ModelEntry& model, size_t max_bytes) {
  static constexpr std::string_view kTruncated = ";truncated";
  const size_t start = out.size();
  const size_t budget = max_bytes > kTruncated.size() ? max_bytes - kTruncated.size() : 0;
  auto name = [&](uint32_t i) -> std::string_view {
    return i < model.replicas.size() ? std::string_view(model.replicas[i].state->name()) : "?";
  };
  out.append("strategy=").append(decision.strategy);
  out.append("; chosen=");
  out.append(decision.chosen >= 0 ? name(static_cast<uint32_t>(decision.chosen)) : "none");
  fmt::format_to(std::back_inserter(out), "; ready={}", decision.ready);
  if (decision.sampled > 0) fmt::format_to(std::back_inserter(out), "; sampled={}", decision.sampled);
  out.append("; candidates=");
  bool first = true;
  bool cut = false;
  for (const routing::CandidateRow& row : decision.rows) {
    if (row.excluded != routing::Exclusion::kNone) continue;
    const size_t mark = out.size();
    if (!first) out.push_back(',');
    first = false;
    out.append(name(row.replica_index)).push_back('=');
    appendScore(out, row.score);
    if (out.size() - start > budget) {
      out.resize(mark);
      cut = true;
      break;
    }
  }
  if (!cut) {
    bool any = false;
    for (const routing::CandidateRow& row : decision.rows) {
      if (row.excluded == routing::Exclusion::kNone) continue;
      const size_t mark = out.size();
      out.append(any ? "," : "; excluded=");
      any = true;
      out.append(name(row.replica_index)).push_back('(');
      out.append(routing::exclusionName(row.excluded)).push_back(')');
      if (out.size() - start > budget) {
        out.resize(mark);
        cut = true;
        break;
      }
    }
  }
  // The top-K set, the warming replicas with their synthetic load, then the candidates a blend's
  // component passed over (+Inf) with why: normalised, their score carries only the penalty.
  // `suffix` appends what follows a row's name.
  auto appendRows = [&](std::string_view label, auto&& wanted, auto&& suffix) {
    bool any = false;
    for (const routing::CandidateRow& row : decision.rows) {
      if (cut) return;
      if (row.excluded != routing::Exclusion::kNone || !wanted(row)) continue;
      const size_t mark = out.size();
      out.append(any ? "," : label);
      any = true;
      out.append(name(row.replica_index));
      suffix(row);
      if (out.size() - start > budget) {
        out.resize(mark);
        cut = true;
      }
    }
  };
  if (decision.pick_set > 0) {
    appendRows(
        "; pick_set=", [](const routing::CandidateRow& r) { return r.in_pick_set; },
        [](const routing::CandidateRow&) {});
  }
  appendRows(
      "; warming=", [](const routing::CandidateRow& r) { return r.synthetic_load > 0; },
      [&](const routing::CandidateRow& r) {
        fmt::format_to(std::back_inserter(out), "+{:.3g}", r.synthetic_load);
      });
  appendRows(
      "; passed_over=",
      [](const routing::CandidateRow& r) { return r.passed_over != routing::PassOver::kNone; },
      [&](const routing::CandidateRow& r) {
        out.append("(").append(routing::passOverName(r.passed_over)).append(")");
      });
  // Prefix-cache: the prompt's blocks, then each candidate's match in blocks.
  if (!cut && decision.prefix_block_tokens > 0) {
    fmt::format_to(std::back_inserter(out), "; prefix_blocks={}x{}tok",
                   decision.prefix_total_blocks, decision.prefix_block_tokens);
    bool any = false;
    for (const routing::CandidateRow& row : decision.rows) {
      if (row.excluded != routing::Exclusion::kNone || row.prefix_blocks < 0) continue;
      const size_t mark = out.size();
      out.append(any ? "," : "; prefix_match=");
      any = true;
      out.append(name(row.replica_index));
      fmt::format_to(std::back_inserter(out), ":{}", row.prefix_blocks);
      if (row.prefix_home) out.append("(home)");
      if (out.size() - start > budget) {
        out.resize(mark);
        cut = true;
        break;
      }
    }
  }
  if (!cut && decision.affinity) out.append("; affinity=session");
  if (!cut && decision.hold) out.append("; slo=hold");
  if (!cut && decision.slo_fallback) out.append("; slo=fallback:load-balance");
  if (!cut && decision.relaxed) out.append("; relaxed=1");
  if (cut) out.append(kTruncated);
}

}  // namespace switchyard::observe
