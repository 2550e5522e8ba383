#include "state/memory_store.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <unordered_map>

#include "auth/quota_bucket.h"

namespace switchyard::state {
namespace {

// Lets the maps be searched with a string_view, so lookups of existing keys never allocate.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

template <typename V>
V& findOrInsert(StringMap<V>& map, std::string_view key) {
  auto it = map.find(key);
  if (it == map.end()) it = map.try_emplace(std::string(key)).first;
  return it->second;
}

struct TokenEntry {
  // output, prefill tokens, prefill ns, tokenless n, tokenless ns, token time ns, timed tokens,
  // token concurrency
  std::array<int64_t, 8> values{};
  TimeNs expires = 0;
};

struct ReplicaState {
  StringMap<int64_t> running;  // gateway → in-flight count
  StringMap<TokenEntry> tokens;
  int64_t changed_at = 0;  // the model's version when a count last changed (0: never)
};

struct Session {
  std::string replica;
  TimeNs expires = 0;
};

struct ModelState {
  StringMap<TimeNs> heartbeat_deadline;  // gateway → heartbeat valid until
  StringMap<ReplicaState> replicas;
  TimeNs rate_tat = 0;  // GCRA theoretical arrival time
  int64_t version = 0;  // bumped by every change of a replica's counts
  StringMap<Session> sessions;
  uint32_t session_writes = 0;

  bool isLive(std::string_view gateway, std::string_view self, TimeNs now) const {
    if (gateway == self) return true;
    auto it = heartbeat_deadline.find(gateway);
    return it != heartbeat_deadline.end() && it->second >= now;
  }
  int64_t liveSum(const ReplicaState& replica, std::string_view self, TimeNs now,
                  bool include_self) const {
    int64_t sum = 0;
    for (const auto& [gateway, count] : replica.running) {
      if (!include_self && gateway == self) continue;
      if (isLive(gateway, self, now)) sum += count;
    }
    return sum;
  }
  // Expired sessions are dropped on access; this sweep bounds what never gets accessed again.
  void sweepSessions(TimeNs now) {
    if (++session_writes % 1024 != 0) return;
    std::erase_if(sessions, [now](const auto& entry) { return entry.second.expires < now; });
  }
};

// Adds every gateway's unexpired token counters of `replica` to `view` (expired ones are dropped,
// as their Redis keys would have expired).
void addTokens(ReplicaState& replica, TimeNs now, ReplicaGlobalView& view) {
  std::erase_if(replica.tokens, [now](const auto& entry) { return entry.second.expires < now; });
  for (const auto& [other, tokens] : replica.tokens) {
    view.output_tokens += tokens.values[0];
    view.prefill_tokens += tokens.values[1];
    view.prefill_ns += tokens.values[2];
    view.tokenless_requests += tokens.values[3];
    view.tokenless_latency_ns += tokens.values[4];
    view.token_time_ns += tokens.values[5];
    view.timed_tokens += tokens.values[6];
    view.token_concurrency += tokens.values[7];
  }
}

struct Job {
  std::string model;
  std::string replica;
  TimeNs expires = 0;
};

struct KeyBudgets {
  auth::QuotaBucket requests;
  auth::QuotaBucket tokens;
};

}  // namespace

struct MemoryStore::Quotas {
  std::mutex mutex;
  StringMap<KeyBudgets> keys;
};

struct MemoryStore::Stripe {
  std::mutex mutex;
  StringMap<ModelState> models;
  StringMap<Job> jobs;
};

struct MemoryStore::Telemetry {
  struct Batch {
    TimeNs at = 0;
    uint64_t seq = 0;
    std::string gateway;
    std::string payload;
  };
  std::mutex mutex;
  StringMap<TimeNs> deadlines;  // gateway → telemetry heartbeat valid until
  std::deque<Batch> batches;    // oldest first
  uint64_t next_seq = 1;
};

struct MemoryStore::Coordination {
  struct Entry {
    std::string value;
    TimeNs expires = 0;
  };
  std::mutex mutex;
  std::map<std::string, Entry, std::less<>> leases;
  std::map<std::string, std::map<std::string, Entry, std::less<>>, std::less<>> marks;
};

MemoryStore::MemoryStore()
    : quotas_(std::make_unique<Quotas>()),
      telemetry_(std::make_unique<Telemetry>()),
      coordination_(std::make_unique<Coordination>()) {
  for (auto& stripe : stripes_) stripe = std::make_unique<Stripe>();
}

bool MemoryStore::holdLease(std::string_view name, std::string_view gateway, TimeNs ttl,
                            TimeNs now) {
  std::lock_guard lock(coordination_->mutex);
  auto it = coordination_->leases.find(name);
  if (it != coordination_->leases.end() && it->second.expires > now &&
      it->second.value != gateway) {
    return false;
  }
  coordination_->leases.insert_or_assign(std::string(name),
                                         Coordination::Entry{std::string(gateway), now + ttl});
  return true;
}

void MemoryStore::putMark(std::string_view set, std::string_view key, std::string_view value,
                          TimeNs ttl, TimeNs now) {
  std::lock_guard lock(coordination_->mutex);
  auto& entries = coordination_->marks[std::string(set)];
  if (ttl <= 0) {
    if (auto it = entries.find(key); it != entries.end()) entries.erase(it);
    return;
  }
  entries.insert_or_assign(std::string(key), Coordination::Entry{std::string(value), now + ttl});
}

std::vector<Mark> MemoryStore::readMarks(std::string_view set, TimeNs now) {
  std::lock_guard lock(coordination_->mutex);
  std::vector<Mark> out;
  auto found = coordination_->marks.find(set);
  if (found == coordination_->marks.end()) return out;
  std::erase_if(found->second, [&](const auto& entry) { return entry.second.expires <= now; });
  for (const auto& [key, entry] : found->second) out.push_back({key, entry.value});
  return out;
}
MemoryStore::~MemoryStore() = default;

MemoryStore::Stripe& MemoryStore::stripeFor(std::string_view key) {
  return *stripes_[StringHash{}(key) % kStripes];
}

AdmitResult MemoryStore::admit(const AdmitRequest& request, std::string_view gateway,
                               TimeNs now) {
  Stripe& stripe = stripeFor(request.model);
  std::lock_guard lock(stripe.mutex);
  ModelState& model = findOrInsert(stripe.models, request.model);
  ReplicaState& replica = findOrInsert(model.replicas, request.replica);

  TimeNs new_tat = -1;
  if (request.rate_per_second > 0) {
    const TimeNs interval =
        std::max<TimeNs>(1, static_cast<TimeNs>(kNsPerSec / request.rate_per_second));
    const auto tolerance = static_cast<TimeNs>(std::max(0.0, request.rate_burst - 1.0) *
                                               static_cast<double>(interval));
    const TimeNs start = std::max(model.rate_tat, now);
    if (start - now > tolerance) {
      return {AdmitVerdict::kRateLimited, model.liveSum(replica, gateway, now, true),
              start - now - tolerance};
    }
    new_tat = start + interval;
  }
  const int64_t inflight = model.liveSum(replica, gateway, now, true);
  if (request.max_inflight > 0 && inflight >= request.max_inflight) {
    return {AdmitVerdict::kInflightLimit, inflight, 0};
  }
  QuotaAnswer quota;
  if (request.quota != nullptr) {
    std::lock_guard quota_lock(quotas_->mutex);
    quota = takeQuotaLocked(*request.quota, now);
    if (quota.verdict != QuotaVerdict::kAdmitted) {
      return {AdmitVerdict::kQuotaLimited, inflight, 0, quota};
    }
  }
  if (new_tat >= 0) model.rate_tat = new_tat;
  if (request.liveness_ttl > 0) {
    TimeNs& deadline = findOrInsert(model.heartbeat_deadline, gateway);
    deadline = std::max(deadline, now + request.liveness_ttl);
  }
  ++findOrInsert(replica.running, gateway);
  replica.changed_at = ++model.version;
  return {AdmitVerdict::kAdmitted, inflight + 1, 0, quota};
}

QuotaAnswer MemoryStore::takeQuota(const QuotaRequest& request, TimeNs now) {
  std::lock_guard lock(quotas_->mutex);
  return takeQuotaLocked(request, now);
}

QuotaAnswer MemoryStore::takeQuotaLocked(const QuotaRequest& request, TimeNs now) {
  KeyBudgets& budgets = findOrInsert(quotas_->keys, request.key);
  QuotaAnswer answer;
  auto describe = [&](const auth::QuotaTake& requests, const auth::QuotaTake& tokens) {
    answer.remaining_requests = request.rpm > 0 ? requests.remaining : -1;
    answer.remaining_tokens = request.tpm > 0 ? tokens.remaining : -1;
    answer.reset_requests = requests.reset;
    answer.reset_tokens = tokens.reset;
  };
  const auth::QuotaTake requests = budgets.requests.take(now, request.rpm, 1);
  if (!requests.allowed) {
    answer.verdict = QuotaVerdict::kRequestLimit;
    answer.retry_after = requests.retry_after;
    describe(requests, budgets.tokens.peek(now, request.tpm));
    return answer;
  }
  const auth::QuotaTake tokens = budgets.tokens.take(now, request.tpm, request.tokens);
  if (!tokens.allowed) {
    budgets.requests.settle(request.rpm, -1);  // nothing is debited on a refusal
    answer.verdict = QuotaVerdict::kTokenLimit;
    answer.retry_after = tokens.retry_after;
    describe(budgets.requests.peek(now, request.rpm), tokens);
    return answer;
  }
  describe(requests, tokens);
  return answer;
}

void MemoryStore::settleQuota(std::string_view key, int64_t tpm, int64_t delta_tokens) {
  std::lock_guard lock(quotas_->mutex);
  auto it = quotas_->keys.find(key);
  if (it != quotas_->keys.end()) it->second.tokens.settle(tpm, delta_tokens);
}

void MemoryStore::release(std::string_view model_name, std::string_view replica_name,
                          std::string_view gateway) {
  Stripe& stripe = stripeFor(model_name);
  std::lock_guard lock(stripe.mutex);
  auto model = stripe.models.find(model_name);
  if (model == stripe.models.end()) return;
  auto replica = model->second.replicas.find(replica_name);
  if (replica == model->second.replicas.end()) return;
  auto count = replica->second.running.find(gateway);
  if (count == replica->second.running.end()) return;
  if (--count->second <= 0) replica->second.running.erase(count);
  replica->second.changed_at = ++model->second.version;
}

SessionPin MemoryStore::lookupSession(std::string_view model_name, std::string_view session,
                                      TimeNs ttl, TimeNs now) {
  Stripe& stripe = stripeFor(model_name);
  std::lock_guard lock(stripe.mutex);
  auto model = stripe.models.find(model_name);
  if (model == stripe.models.end()) return {};
  auto pin = model->second.sessions.find(session);
  if (pin == model->second.sessions.end()) return {};
  if (pin->second.expires < now) {
    model->second.sessions.erase(pin);
    return {};
  }
  pin->second.expires = now + ttl;
  return {false, pin->second.replica};
}

SessionPin MemoryStore::pinSession(std::string_view model_name, std::string_view session,
                                   std::string_view expected, std::string_view replica,
                                   TimeNs ttl, TimeNs now) {
  Stripe& stripe = stripeFor(model_name);
  std::lock_guard lock(stripe.mutex);
  ModelState& model = findOrInsert(stripe.models, model_name);
  model.sweepSessions(now);
  Session& pin = findOrInsert(model.sessions, session);
  if (pin.expires < now) pin.replica.clear();
  if (pin.replica.empty() || pin.replica == expected) pin.replica = replica;
  pin.expires = now + ttl;
  return {false, pin.replica};
}

void MemoryStore::recordJob(std::string_view job_id, std::string_view model,
                            std::string_view replica, TimeNs ttl, TimeNs now) {
  Stripe& stripe = stripeFor(job_id);
  std::lock_guard lock(stripe.mutex);
  Job& job = findOrInsert(stripe.jobs, job_id);
  job.model = model;
  job.replica = replica;
  job.expires = now + ttl;
}

JobOwner MemoryStore::lookupJob(std::string_view job_id, TimeNs now) {
  Stripe& stripe = stripeFor(job_id);
  std::lock_guard lock(stripe.mutex);
  auto job = stripe.jobs.find(job_id);
  if (job == stripe.jobs.end()) return {};
  if (job->second.expires < now) {
    stripe.jobs.erase(job);
    return {};
  }
  return {false, job->second.model, job->second.replica};
}

void MemoryStore::publish(std::span<const ReplicaReport> reports, std::string_view gateway,
                          TimeNs liveness_ttl, TimeNs now) {
  for (const ReplicaReport& report : reports) {
    Stripe& stripe = stripeFor(report.model);
    std::lock_guard lock(stripe.mutex);
    ModelState& model = findOrInsert(stripe.models, report.model);
    findOrInsert(model.heartbeat_deadline, gateway) = now + liveness_ttl;
    if (report.heartbeat_only) continue;
    ReplicaState& replica = findOrInsert(model.replicas, report.replica);
    if (!report.refresh_only) replica.changed_at = ++model.version;
    if (report.publish_running || report.reconcile_running) {
      if (report.running > 0) {
        findOrInsert(replica.running, gateway) = report.running;
      } else if (auto it = replica.running.find(gateway); it != replica.running.end()) {
        replica.running.erase(it);
      }
    }
    TokenEntry& tokens = findOrInsert(replica.tokens, gateway);
    tokens.values = {report.output_tokens, report.prefill_tokens, report.prefill_ns,
                     report.tokenless_requests, report.tokenless_latency_ns,
                     report.token_time_ns,       report.timed_tokens,
                     report.token_concurrency};
    tokens.expires = now + kTokenRetention;
  }
}

std::vector<ReplicaGlobalView> MemoryStore::read(std::span<const ReplicaReport> replicas,
                                                 std::string_view gateway, TimeNs now) {
  std::vector<ReplicaGlobalView> views;
  views.reserve(replicas.size());
  for (const ReplicaReport& wanted : replicas) {
    ReplicaGlobalView& view = views.emplace_back();
    view.model = wanted.model;
    view.replica = wanted.replica;
    Stripe& stripe = stripeFor(wanted.model);
    std::lock_guard lock(stripe.mutex);
    auto model = stripe.models.find(wanted.model);
    if (model == stripe.models.end()) continue;
    for (const auto& [other, deadline] : model->second.heartbeat_deadline) {
      if (other == gateway || deadline < now) continue;
      ++view.live_gateways;
      if (other < gateway) ++view.gateway_rank;
    }
    auto replica = model->second.replicas.find(wanted.replica);
    if (replica == model->second.replicas.end()) continue;
    view.others_running = model->second.liveSum(replica->second, gateway, now, false);
    addTokens(replica->second, now, view);
  }
  return views;
}

// Cursors are the sequence number of the last batch seen, as text (Redis uses stream ids; a
// cursor is opaque to its caller either way).
SignalExchange MemoryStore::exchangeSignals(std::string_view payload, std::string_view cursor,
                                            std::string_view gateway, TimeNs liveness_ttl,
                                            TimeNs now) {
  Telemetry& t = *telemetry_;
  std::lock_guard lock(t.mutex);
  findOrInsert(t.deadlines, gateway) = now + liveness_ttl;
  std::erase_if(t.deadlines,
                [&](const auto& entry) { return entry.second < now - 10 * liveness_ttl; });
  SignalExchange out;
  for (const auto& [name, deadline] : t.deadlines) {
    if (deadline >= now) out.live_gateways.push_back(name);
  }
  std::sort(out.live_gateways.begin(), out.live_gateways.end());
  while (!t.batches.empty() && t.batches.front().at < now - kSignalRetention) {
    t.batches.pop_front();
  }
  if (!payload.empty()) {
    t.batches.push_back({now, t.next_seq++, std::string(gateway), std::string(payload)});
  }
  uint64_t after = 0;
  bool from_time = cursor.empty();
  if (!from_time) {
    after = std::strtoull(std::string(cursor).c_str(), nullptr, 10);
  }
  uint64_t last = after;
  size_t answered = 0;
  for (const Telemetry::Batch& batch : t.batches) {
    if (from_time ? batch.at < now - kNsPerSec : batch.seq <= after) continue;
    if (answered++ >= kMaxSignalBatches) break;
    last = batch.seq;
    if (batch.gateway == gateway) continue;
    out.batches.push_back({batch.gateway, (now - batch.at) / kNsPerMs, batch.payload});
  }
  out.cursor = last == 0 ? std::string(cursor) : std::to_string(last);
  return out;
}

std::vector<ModelChanges> MemoryStore::readChanges(std::span<const ChangeQuery> queries,
                                                   std::string_view gateway, TimeNs now) {
  std::vector<ModelChanges> answers;
  answers.reserve(queries.size());
  for (const ChangeQuery& query : queries) {
    ModelChanges& answer = answers.emplace_back();
    answer.model = query.model;
    Stripe& stripe = stripeFor(query.model);
    std::lock_guard lock(stripe.mutex);
    ModelState& model = findOrInsert(stripe.models, query.model);
    std::vector<std::string_view> live{gateway};
    for (const auto& [other, deadline] : model.heartbeat_deadline) {
      if (other != gateway && deadline >= now) live.push_back(other);
    }
    std::sort(live.begin(), live.end());
    std::string signature;
    for (size_t i = 0; i < live.size(); ++i) {
      if (i > 0) signature += ',';
      signature += live[i];
      if (live[i] == gateway) answer.gateway_rank = static_cast<int>(i);
    }
    answer.live_gateways = static_cast<int>(live.size());
    const int64_t since = query.cursor.version;
    answer.full = signature != query.cursor.live_signature || since < 0 || since > model.version;
    answer.cursor = {model.version, signature};
    if (!answer.full && since == model.version) continue;
    for (auto& [name, replica] : model.replicas) {
      if (replica.changed_at == 0 || (!answer.full && replica.changed_at <= since)) continue;
      ReplicaGlobalView& view = answer.replicas.emplace_back();
      view.model = query.model;
      view.replica = name;
      view.live_gateways = answer.live_gateways;
      view.gateway_rank = answer.gateway_rank;
      view.others_running = model.liveSum(replica, gateway, now, false);
      addTokens(replica, now, view);
    }
  }
  return answers;
}

void MemoryStore::retire(std::span<const ReplicaReport> replicas, std::string_view gateway) {
  for (const ReplicaReport& wanted : replicas) {
    Stripe& stripe = stripeFor(wanted.model);
    std::lock_guard lock(stripe.mutex);
    auto model = stripe.models.find(wanted.model);
    if (model == stripe.models.end()) continue;
    if (auto hb = model->second.heartbeat_deadline.find(gateway);
        hb != model->second.heartbeat_deadline.end()) {
      model->second.heartbeat_deadline.erase(hb);
    }
    auto replica = model->second.replicas.find(wanted.replica);
    if (replica == model->second.replicas.end()) continue;
    if (auto it = replica->second.running.find(gateway); it != replica->second.running.end()) {
      replica->second.running.erase(it);
    }
  }
}

}  // namespace switchyard::state
