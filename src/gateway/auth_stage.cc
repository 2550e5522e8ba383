#include "gateway/auth_stage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace switchyard::gateway {
namespace {

// Keeps a published table alive for one worker: copies of the returned pointer count
// references on this worker's control block, not on the one every worker shares.
struct TableHolder {
  std::shared_ptr<const auth::KeyTable> table;
};

std::string_view limitLabel(state::QuotaVerdict verdict) {
  return verdict == state::QuotaVerdict::kTokenLimit ? "tokens per min (TPM)"
                                                     : "requests per min (RPM)";
}

}  // namespace

void appendResetDuration(std::string& out, TimeNs duration) {
  char text[32];
  int n = 0;
  duration = std::max<TimeNs>(0, duration);
  if (duration < kNsPerSec) {
    n = std::snprintf(text, sizeof text, "%lldms",
                      static_cast<long long>((duration + kNsPerMs - 1) / kNsPerMs));
  } else if (duration < 60 * kNsPerSec) {
    n = std::snprintf(text, sizeof text, "%.3gs", static_cast<double>(duration) / kNsPerSec);
  } else {
    const long long seconds = duration / kNsPerSec;
    n = std::snprintf(text, sizeof text, "%lldm%llds", seconds / 60, seconds % 60);
  }
  out.append(text, static_cast<size_t>(std::max(0, n)));
}

AuthStage::AuthStage(SecurityPlane& security, observe::WorkerObserver& observer,
                     state::SharedStateClient& shared)
    : security_(security), observer_(observer), shared_(shared), tables_(security.keys()) {}

void AuthStage::begin(RequestAuth& a) const {
  a.stage = const_cast<AuthStage*>(this);
  a.table.reset();
  a.key = nullptr;
  a.challenge = false;
  a.budget_known = false;
  a.remaining_requests = -1;
  a.remaining_tokens = -1;
  a.debit = RequestAuth::Debit::kNone;
  a.debit_scale = 1;
  a.debited_tokens = 0;
  a.deferred = false;
}

std::optional<Refusal> AuthStage::authenticate(std::string_view authorization, RequestAuth& a,
                                               observe::RequestRecord& record) {
  a.stage = this;
  if (!enabled()) return std::nullopt;
  const auth::KeyTable* table = tables_.get();
  if (table != local_source_) {
    // A new snapshot: one allocation per reload and worker.
    local_source_ = table;
    auto holder = std::make_shared<TableHolder>(TableHolder{security_.keys().current()});
    local_table_ = std::shared_ptr<const auth::KeyTable>(holder, holder->table.get());
  }
  const std::string_view token = auth::bearerToken(authorization);
  const auth::KeyEntry* key = token.empty() || table == nullptr ? nullptr : table->find(token);
  if (key == nullptr) {
    a.challenge = true;
    const bool missing = authorization.empty();
    security_.countAuthFailure(missing ? AuthFailure::kMissing : AuthFailure::kInvalid);
    // The key is never echoed, not even in part.
    return Refusal{401,
                   missing ? "You didn't provide an API key. Send it in the Authorization "
                             "header as `Authorization: Bearer YOUR_KEY`."
                           : "Incorrect API key provided.",
                   "invalid_request_error", "invalid_api_key", {}};
  }
  a.table = local_table_;
  a.key = key;
  record.key_name = key->state->name;
  return std::nullopt;
}

bool AuthStage::mayUse(const RequestAuth& a, std::string_view model) const {
  if (!enabled()) return true;
  if (a.key == nullptr) return false;
  if (a.key->mayUse(model)) return true;
  a.key->state->counters.model_denied.fetch_add(1, std::memory_order_relaxed);
  return false;
}

boost::asio::awaitable<std::optional<Refusal>> AuthStage::beforeRouting(
    RequestAuth& a, const fleet::ModelEntry& model, int64_t estimated_tokens,
    bool shared_admission, TimeNs now) {
  if (a.key == nullptr) co_return std::nullopt;
  auth::KeyState& state = *a.key->state;
  if (!a.hasBudgets()) {
    state.counters.allowed.fetch_add(1, std::memory_order_relaxed);
    co_return std::nullopt;
  }
  a.quota = state::QuotaRequest{state.name, a.key->rpm, a.key->tpm,
                                std::max<int64_t>(0, estimated_tokens)};
  if (!shared_.distributed()) co_return takeLocally(a, 1, now);
  if (shared_admission) {
    a.deferred = true;  // checked by the admission on the replica, in the same call
    co_return std::nullopt;
  }
  const state::QuotaResult result = co_await shared_.checkQuota(a.quota);
  if (result.degraded) {
    co_return takeLocally(
        a, std::max(1, model.runtime->live_gateways.load(std::memory_order_relaxed)), now);
  }
  co_return onSharedAnswer(a, result.answer);
}

std::optional<Refusal> AuthStage::onSharedAnswer(RequestAuth& a,
                                                 const state::QuotaAnswer& answer) {
  note(a, answer);
  a.deferred = false;  // a failover's admission does not debit the budgets again
  if (answer.verdict != state::QuotaVerdict::kAdmitted) {
    return refusal(a, answer.verdict, answer.retry_after);
  }
  a.debit = RequestAuth::Debit::kShared;
  a.debited_tokens = a.quota.tokens;
  a.key->state->counters.allowed.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

std::optional<Refusal> AuthStage::onSharedDegraded(RequestAuth& a, int gateways, TimeNs now) {
  return takeLocally(a, std::max(1, gateways), now);
}

std::optional<Refusal> AuthStage::takeLocally(RequestAuth& a, int64_t scale, TimeNs now) {
  a.deferred = false;
  auth::KeyState& state = *a.key->state;
  const auth::QuotaTake requests = state.requests.take(now, a.quota.rpm, 1, scale);
  state::QuotaAnswer answer;
  answer.remaining_requests = a.quota.rpm > 0 ? requests.remaining : -1;
  answer.reset_requests = requests.reset;
  if (!requests.allowed) {
    const auth::QuotaTake tokens = state.tokens.peek(now, a.quota.tpm);
    answer.remaining_tokens = a.quota.tpm > 0 ? tokens.remaining : -1;
    answer.reset_tokens = tokens.reset;
    note(a, answer);
    return refusal(a, state::QuotaVerdict::kRequestLimit, requests.retry_after);
  }
  const auth::QuotaTake tokens = state.tokens.take(now, a.quota.tpm, a.quota.tokens, scale);
  answer.remaining_tokens = a.quota.tpm > 0 ? tokens.remaining : -1;
  answer.reset_tokens = tokens.reset;
  if (!tokens.allowed) {
    state.requests.settle(a.quota.rpm, -scale);  // nothing is taken on a refusal
    answer.remaining_requests = a.quota.rpm > 0 ? requests.remaining + 1 : -1;
    note(a, answer);
    return refusal(a, state::QuotaVerdict::kTokenLimit, tokens.retry_after);
  }
  note(a, answer);
  a.debit = RequestAuth::Debit::kLocal;
  a.debit_scale = scale;
  a.debited_tokens = a.quota.tokens;
  state.counters.allowed.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void AuthStage::note(RequestAuth& a, const state::QuotaAnswer& answer) {
  a.budget_known = true;
  a.remaining_requests = answer.remaining_requests;
  a.remaining_tokens = answer.remaining_tokens;
  a.reset_requests = answer.reset_requests;
  a.reset_tokens = answer.reset_tokens;
}

Refusal AuthStage::refusal(RequestAuth& a, state::QuotaVerdict verdict, TimeNs retry_after) {
  const bool tokens = verdict == state::QuotaVerdict::kTokenLimit;
  auth::KeyCounters& counters = a.key->state->counters;
  (tokens ? counters.token_limited : counters.request_limited)
      .fetch_add(1, std::memory_order_relaxed);
  const observe::LimitKind kind = tokens ? observe::LimitKind::kTokenRate
                                         : observe::LimitKind::kUserRate;
  observer_.countRejected(kind);
  const int64_t limit = tokens ? a.key->tpm : a.key->rpm;
  const double wait_s = static_cast<double>(std::max<TimeNs>(retry_after, kNsPerMs)) / kNsPerSec;
  std::string message =
      tokens ? fmt::format("Rate limit reached for key {} on {}: Limit {}, Requested {}, "
                           "Remaining {}. Please try again in {:.3g}s.",
                           a.key->state->name, limitLabel(verdict), limit, a.quota.tokens,
                           std::max<int64_t>(0, a.remaining_tokens), wait_s)
             : fmt::format("Rate limit reached for key {} on {}: Limit {}, Remaining {}. "
                           "Please try again in {:.3g}s.",
                           a.key->state->name, limitLabel(verdict), limit,
                           std::max<int64_t>(0, a.remaining_requests), wait_s);
  // OpenAI's shape: the type names the limit that refused ("requests" or "tokens").
  Refusal out = Refusal::limited(kind, "rate_limit_exceeded", std::move(message),
                                 std::max<TimeNs>(retry_after, 1));
  out.type = tokens ? "tokens" : "requests";
  return out;
}

void AuthStage::settle(RequestAuth& a, const observe::RequestRecord& record) {
  if (a.key == nullptr) return;
  auth::KeyState& state = *a.key->state;
  const bool completed = record.completed_at >= 0;
  const int64_t prompt = completed ? std::max<int64_t>(0, record.input_tokens) : 0;
  const int64_t completion = completed ? std::max<int64_t>(0, record.output_tokens) : 0;
  if (prompt > 0) state.counters.prompt_tokens.fetch_add(static_cast<uint64_t>(prompt));
  if (completion > 0) {
    state.counters.completion_tokens.fetch_add(static_cast<uint64_t>(completion));
  }
  const int64_t delta = prompt + completion - a.debited_tokens;
  switch (a.debit) {
    case RequestAuth::Debit::kLocal:
      state.tokens.settle(a.key->tpm, delta * a.debit_scale);
      break;
    case RequestAuth::Debit::kShared:
      shared_.settleQuota(state.name, a.key->tpm, delta);
      break;
    case RequestAuth::Debit::kNone:
      break;
  }
  a.debit = RequestAuth::Debit::kNone;
  a.table.reset();
  a.key = nullptr;
}

void AuthStage::appendHeaders(const RequestAuth& a, std::string& head) {
  if (a.challenge) {
    head.append("WWW-Authenticate: Bearer realm=\"switchyard\"\r\n");
    return;
  }
  if (a.key == nullptr || !a.budget_known) return;
  char number[24];
  auto header = [&](std::string_view name, int64_t value) {
    const int n = std::snprintf(number, sizeof number, "%lld", static_cast<long long>(value));
    head.append(name).append(": ").append(number, static_cast<size_t>(n)).append("\r\n");
  };
  if (a.key->rpm > 0) {
    header("x-ratelimit-limit-requests", a.key->rpm);
    header("x-ratelimit-remaining-requests", std::max<int64_t>(0, a.remaining_requests));
    head.append("x-ratelimit-reset-requests: ");
    appendResetDuration(head, a.reset_requests);
    head.append("\r\n");
  }
  if (a.key->tpm > 0) {
    header("x-ratelimit-limit-tokens", a.key->tpm);
    header("x-ratelimit-remaining-tokens", std::max<int64_t>(0, a.remaining_tokens));
    head.append("x-ratelimit-reset-tokens: ");
    appendResetDuration(head, a.reset_tokens);
    head.append("\r\n");
  }
}

}  // namespace switchyard::gateway
