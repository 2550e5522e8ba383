#include "state/redis/redis_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <random>
#include <utility>

#include "state/redis/redis_connection.h"
#include "state/redis/redis_keys.h"

namespace switchyard::state {
namespace {

namespace asio = boost::asio;
using redis::RedisCommand;
using redis::RedisConnection;
using redis::RedisKeys;
using redis::RedisValue;
using redis::ScriptId;

// A gateway whose heartbeat has been stale this many TTLs is removed from `live` and `run`.
constexpr int64_t kReapAfterTtls = 10;
// A slot lease call waits this many request-path call timeouts (growSlots says why).
constexpr int64_t kLeaseCallTimeoutFactor = 10;
constexpr std::string_view kTokenRetentionMs = "3600000";

int64_t toMs(TimeNs ns) { return std::max<int64_t>(1, (ns + kNsPerMs - 1) / kNsPerMs); }
// How long a model's `live` hash outlives the last heartbeat written into it: long enough for the
// reaping of dead gateways, which waits ten TTLs.
int64_t liveKeyExpiryMs(TimeNs liveness_ttl) {
  return toMs(liveness_ttl) * (kReapAfterTtls + 1);
}

RedisCommand scriptCommand(ScriptId script, int keys, std::vector<std::string> args) {
  return RedisCommand{script, keys, std::move(args)};
}
RedisCommand plainCommand(std::vector<std::string> args) {
  return RedisCommand{std::nullopt, 0, std::move(args)};
}
std::vector<RedisCommand> single(RedisCommand command) {
  std::vector<RedisCommand> commands;
  commands.push_back(std::move(command));
  return commands;
}

// A key's budgets debited by a call whose caller was told "degraded" (and decided locally) are
// refunded. `req_key`/`tok_key` index the command's args; rpm, tpm and tokens follow `argv`.
void refundQuota(RedisConnection& connection, const RedisCommand& command, size_t req_key,
                 size_t tok_key, size_t argv) {
  const std::vector<std::string>& a = command.args;
  connection.send(RedisCommand{ScriptId::kQuotaSettle, 1, {a[req_key], a[argv], "-1"}});
  connection.send(
      RedisCommand{ScriptId::kQuotaSettle, 1, {a[tok_key], a[argv + 1], "-" + a[argv + 2]}});
}

// An admission that Redis counted after the caller was told "degraded" is undone, so a slow
// Redis does not leak in-flight counts (nor a key's budget). The admit command's args: rate,
// live, run, ver, chg keys [, quota req, quota tok], gateway, ..., replica [, rpm, tpm, tokens].
void undoLateAdmission(RedisConnection& connection, const RedisCommand& admit,
                       const RedisValue& reply) {
  if (reply.integerAt(0, -1) != 0) return;
  const auto keys = static_cast<size_t>(admit.script_keys);
  connection.send(RedisCommand{
      ScriptId::kRelease, 3, {admit.args[2], admit.args[3], admit.args[4], admit.args[keys],
                              admit.args[keys + 6]}});
  if (keys == 8) refundQuota(connection, admit, 6, 7, keys + 7);
}

// Slots leased after the caller was told "degraded" are given back (and a key's budgets
// refunded). The grow command's args: live, run, slots [, quota req, quota tok] keys, gateway,
// field, ... [, rpm, tpm, tokens].
void undoLateGrowth(RedisConnection& connection, const RedisCommand& grow,
                    const RedisValue& reply) {
  const int64_t granted = reply.integerAt(0, 0);
  if (granted <= 0) return;
  const auto keys = static_cast<size_t>(grow.script_keys);
  connection.send(RedisCommand{ScriptId::kChangeSlots, 1,
                               {grow.args[2], grow.args[keys + 1], std::to_string(-granted)}});
  if (keys == 5) refundQuota(connection, grow, 3, 4, keys + 6);
}

void undoLateQuota(RedisConnection& connection, const RedisCommand& quota,
                   const RedisValue& reply) {
  if (reply.integerAt(0, -1) == 0) refundQuota(connection, quota, 0, 1, 2);
}

// A key's budgets in a script that checks them with something else: their two bucket keys go
// after the script's own keys, their limits and the request's tokens after its own arguments.
void appendQuotaKeys(std::vector<std::string>& args, const RedisKeys& keys,
                     const QuotaRequest* quota) {
  if (quota == nullptr) return;
  args.push_back(keys.quota(quota->key, "req"));
  args.push_back(keys.quota(quota->key, "tok"));
}
void appendQuotaArgs(std::vector<std::string>& args, const QuotaRequest* quota) {
  if (quota == nullptr) return;
  args.push_back(std::to_string(quota->rpm));
  args.push_back(std::to_string(quota->tpm));
  args.push_back(std::to_string(std::max<int64_t>(0, quota->tokens)));
}

// The heartbeat renewal arguments of admit and growSlots: TTL and the live key's expiry (ms).
void appendLiveness(std::vector<std::string>& args, TimeNs liveness_ttl) {
  args.push_back(std::to_string(liveness_ttl > 0 ? toMs(liveness_ttl) : 0));
  args.push_back(std::to_string(liveKeyExpiryMs(liveness_ttl)));
}

QuotaAnswer quotaAnswerAt(const RedisValue& reply, size_t first) {
  QuotaAnswer answer;
  switch (reply.integerAt(first, 0)) {
    case 1: answer.verdict = QuotaVerdict::kRequestLimit; break;
    case 2: answer.verdict = QuotaVerdict::kTokenLimit; break;
    default: break;
  }
  answer.remaining_requests = reply.integerAt(first + 1, -1);
  answer.remaining_tokens = reply.integerAt(first + 2, -1);
  answer.reset_requests = reply.integerAt(first + 3) * 1000;  // µs → ns
  answer.reset_tokens = reply.integerAt(first + 4) * 1000;
  return answer;
}

// Report indices grouped by model, models in order of first appearance: one script per model.
struct ModelGroup {
  std::string_view model;
  std::vector<size_t> indices;
};
std::vector<ModelGroup> groupByModel(std::span<const ReplicaReport> reports) {
  std::vector<ModelGroup> groups;
  for (size_t i = 0; i < reports.size(); ++i) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const ModelGroup& g) { return g.model == reports[i].model; });
    if (group == groups.end()) group = groups.insert(groups.end(), {reports[i].model, {}});
    group->indices.push_back(i);
  }
  return groups;
}

// One replica's view in a read script's reply from `base` on: the others' in-flight sum, then
// the eight token sums (replicaView in redis_scripts.cc).
void readView(const RedisValue& reply, size_t base, ReplicaGlobalView& view) {
  view.others_running = reply.integerAt(base);
  view.output_tokens = reply.integerAt(base + 1);
  view.prefill_tokens = reply.integerAt(base + 2);
  view.prefill_ns = reply.integerAt(base + 3);
  view.tokenless_requests = reply.integerAt(base + 4);
  view.tokenless_latency_ns = reply.integerAt(base + 5);
  view.token_time_ns = reply.integerAt(base + 6);
  view.timed_tokens = reply.integerAt(base + 7);
  view.token_concurrency = reply.integerAt(base + 8);
}

// Whatever happens after the first co_await must not touch `this`: the owner may destroy the
// client while a call is in flight. The coroutines hold the connection themselves.
class RedisClient final : public SharedStateClient {
 public:
  RedisClient(std::shared_ptr<RedisConnection> connection, RedisKeys keys, std::string gateway,
              std::string slot_field)
      : connection_(std::move(connection)),
        keys_(std::move(keys)),
        gateway_(std::move(gateway)),
        slot_field_(std::move(slot_field)) {}
  ~RedisClient() override { connection_->shutdown(); }

  bool distributed() const override { return true; }

  asio::awaitable<AdmitResult> admit(const AdmitRequest& request) override {
    int64_t interval_us = 0;
    int64_t tolerance_us = 0;
    if (request.rate_per_second > 0) {
      interval_us = std::max<int64_t>(1, std::llround(1e6 / request.rate_per_second));
      tolerance_us = std::llround(std::max(0.0, request.rate_burst - 1.0) *
                                  static_cast<double>(interval_us));
    }
    std::vector<std::string> args{keys_.rate(request.model), keys_.live(request.model),
                                  keys_.run(request.model, request.replica),
                                  keys_.version(request.model), keys_.changes(request.model),
                                  keys_.slots(request.model, request.replica)};
    const QuotaRequest* quota = request.quota;
    appendQuotaKeys(args, keys_, quota);
    const int key_count = static_cast<int>(args.size());
    args.push_back(gateway_);
    args.push_back(std::to_string(std::max<int64_t>(0, request.max_inflight)));
    args.push_back(std::to_string(interval_us));
    args.push_back(std::to_string(tolerance_us));
    appendLiveness(args, request.liveness_ttl);
    args.push_back(std::string(request.replica));
    appendQuotaArgs(args, quota);
    auto commands = single(scriptCommand(ScriptId::kAdmit, key_count, std::move(args)));
    commands[0].on_late_reply = &undoLateAdmission;
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    AdmitResult result;  // kDegraded
    if (!replies || !(*replies)[0].isArray()) co_return result;
    const RedisValue& reply = (*replies)[0];
    switch (reply.integerAt(0, -1)) {
      case 0: result.verdict = AdmitVerdict::kAdmitted; break;
      case 1: result.verdict = AdmitVerdict::kInflightLimit; break;
      case 2: result.verdict = AdmitVerdict::kRateLimited; break;
      case 3: result.verdict = AdmitVerdict::kQuotaLimited; break;
      default: co_return result;
    }
    result.inflight = reply.integerAt(1);
    result.retry_after = reply.integerAt(2) * 1000;  // µs → ns
    if (quota != nullptr && reply.elements.size() >= 8) {
      result.quota = quotaAnswerAt(reply, 3);
      result.quota.retry_after = result.retry_after;
    }
    co_return result;
  }

  asio::awaitable<SlotGrant> growSlots(const SlotRequest& request) override {
    std::vector<std::string> args{keys_.live(request.model),
                                  keys_.run(request.model, request.replica),
                                  keys_.slots(request.model, request.replica)};
    const QuotaRequest* quota = request.quota;
    appendQuotaKeys(args, keys_, quota);
    const int key_count = static_cast<int>(args.size());
    args.push_back(gateway_);
    args.push_back(slot_field_);
    args.push_back(std::to_string(std::max<int64_t>(0, request.max_inflight)));
    args.push_back(std::to_string(std::max<int64_t>(1, request.wanted)));
    appendLiveness(args, request.liveness_ttl);
    appendQuotaArgs(args, quota);
    auto commands = single(scriptCommand(ScriptId::kGrowSlots, key_count, std::move(args)));
    commands[0].on_late_reply = &undoLateGrowth;
    auto connection = connection_;
    // A lease call waits longer than a request-by-request admission: it is made once per `lead`
    // requests, so its wait costs little, and a timed-out lease makes the request decide on this
    // gateway's share alone while the other gateways still lease through Redis, which does not
    // count that request until the next sync (a burst could then pass the limit by a request).
    const TimeNs timeout = kLeaseCallTimeoutFactor * connection->timeout();
    auto replies = co_await connection->call(std::move(commands), timeout);
    SlotGrant grant;  // degraded
    if (!replies || !(*replies)[0].isArray() || (*replies)[0].elements.size() < 3) {
      co_return grant;
    }
    const RedisValue& reply = (*replies)[0];
    grant.degraded = false;
    grant.granted = std::max<int64_t>(0, reply.integerAt(0));
    grant.held = reply.integerAt(2);
    if (quota != nullptr && reply.elements.size() >= 9) {
      grant.quota = quotaAnswerAt(reply, 3);
      grant.quota.retry_after = reply.integerAt(8) * 1000;  // µs → ns
    }
    co_return grant;
  }

  void changeSlots(std::string_view model, std::string_view replica, int64_t delta) override {
    if (delta == 0) return;
    connection_->send(scriptCommand(ScriptId::kChangeSlots, 1,
                                    {keys_.slots(model, replica), slot_field_,
                                     std::to_string(delta)}));
  }

  asio::awaitable<QuotaResult> checkQuota(const QuotaRequest& request) override {
    auto commands = single(scriptCommand(
        ScriptId::kQuota, 2,
        {keys_.quota(request.key, "req"), keys_.quota(request.key, "tok"),
         std::to_string(request.rpm), std::to_string(request.tpm),
         std::to_string(std::max<int64_t>(0, request.tokens))}));
    commands[0].on_late_reply = &undoLateQuota;
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    QuotaResult result;  // degraded
    if (!replies || !(*replies)[0].isArray() || (*replies)[0].elements.size() < 6) {
      co_return result;
    }
    const RedisValue& reply = (*replies)[0];
    result.degraded = false;
    result.answer.verdict = reply.integerAt(0) == 1   ? QuotaVerdict::kRequestLimit
                            : reply.integerAt(0) == 2 ? QuotaVerdict::kTokenLimit
                                                      : QuotaVerdict::kAdmitted;
    result.answer.remaining_requests = reply.integerAt(1, -1);
    result.answer.remaining_tokens = reply.integerAt(2, -1);
    result.answer.retry_after = reply.integerAt(3) * 1000;
    result.answer.reset_requests = reply.integerAt(4) * 1000;
    result.answer.reset_tokens = reply.integerAt(5) * 1000;
    co_return result;
  }

  void settleQuota(std::string_view key, int64_t tpm, int64_t delta_tokens) override {
    if (tpm <= 0 || delta_tokens == 0) return;
    connection_->send(scriptCommand(
        ScriptId::kQuotaSettle, 1,
        {keys_.quota(key, "tok"), std::to_string(tpm), std::to_string(delta_tokens)}));
  }

  void release(std::string_view model, std::string_view replica) override {
    connection_->send(scriptCommand(ScriptId::kRelease, 3,
                                    {keys_.run(model, replica), keys_.version(model),
                                     keys_.changes(model), gateway_, std::string(replica)}));
  }

  asio::awaitable<SessionPin> lookupSession(std::string_view model, std::string_view session,
                                            TimeNs ttl) override {
    auto commands = single(plainCommand(
        {"GETEX", keys_.session(model, session), "PX", std::to_string(toMs(ttl))}));
    auto connection = connection_;
    co_return pinFrom(co_await connection->call(std::move(commands)));
  }

  asio::awaitable<SessionPin> pinSession(std::string_view model, std::string_view session,
                                         std::string_view expected, std::string_view replica,
                                         TimeNs ttl) override {
    auto commands = single(scriptCommand(
        ScriptId::kPinSession, 1,
        {keys_.session(model, session), std::string(expected), std::string(replica),
         std::to_string(toMs(ttl))}));
    auto connection = connection_;
    co_return pinFrom(co_await connection->call(std::move(commands)));
  }

  void recordJob(std::string_view job_id, std::string_view model, std::string_view replica,
                 TimeNs ttl) override {
    connection_->send(scriptCommand(ScriptId::kRecordJob, 1,
                                    {keys_.job(job_id), std::string(model), std::string(replica),
                                     std::to_string(toMs(ttl))}));
  }

  asio::awaitable<JobOwner> lookupJob(std::string_view job_id) override {
    auto commands = single(plainCommand({"HMGET", keys_.job(job_id), "model", "replica"}));
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    JobOwner owner;
    if (!replies || !(*replies)[0].isArray() || (*replies)[0].elements.size() != 2) {
      owner.degraded = true;
      co_return owner;
    }
    owner.model = std::move((*replies)[0].elements[0].text);  // empty when nil
    owner.replica = std::move((*replies)[0].elements[1].text);
    co_return owner;
  }

  const SharedStateStats& stats() const override { return connection_->stats(); }

 private:
  static SessionPin pinFrom(std::optional<std::vector<RedisValue>> replies) {
    SessionPin pin;
    if (!replies) {
      pin.degraded = true;
    } else if ((*replies)[0].type == RedisValue::Type::kString) {
      pin.replica = std::move((*replies)[0].text);
    }
    return pin;
  }

  std::shared_ptr<RedisConnection> connection_;
  RedisKeys keys_;
  std::string gateway_;
  std::string slot_field_;  // this worker's field in slots:REPLICA
};

class RedisSync final : public SharedStateSync {
 public:
  RedisSync(std::shared_ptr<RedisConnection> connection, RedisKeys keys, std::string gateway,
            std::string slot_prefix)
      : connection_(std::move(connection)),
        keys_(std::move(keys)),
        gateway_(std::move(gateway)),
        slot_prefix_(std::move(slot_prefix)) {}
  ~RedisSync() override { connection_->shutdown(); }

  bool distributed() const override { return true; }

  asio::awaitable<bool> publish(std::span<const ReplicaReport> reports,
                                TimeNs liveness_ttl) override {
    const int64_t ttl_ms = toMs(liveness_ttl);
    std::vector<RedisCommand> commands;
    for (const ModelGroup& group : groupByModel(reports)) {
      // The heartbeat also reaps long-dead gateways from the run keys this gateway reports.
      std::vector<std::string> args{keys_.live(group.model)};
      std::vector<std::string> changed{keys_.version(group.model), keys_.changes(group.model)};
      for (size_t i : group.indices) {
        if (reports[i].heartbeat_only) continue;
        args.push_back(keys_.run(group.model, reports[i].replica));
        if (!reports[i].refresh_only) changed.push_back(reports[i].replica);
      }
      const size_t first_slots = args.size() + 1;  // Lua's index of the first slots key
      for (size_t i : group.indices) {
        if (reports[i].heartbeat_only) continue;
        args.push_back(keys_.slots(group.model, reports[i].replica));
      }
      const int key_count = static_cast<int>(args.size());
      args.push_back(gateway_);
      args.push_back(std::to_string(ttl_ms));
      args.push_back(std::to_string(ttl_ms * kReapAfterTtls));
      args.push_back(slot_prefix_);
      args.push_back(std::to_string(first_slots));
      commands.push_back(scriptCommand(ScriptId::kHeartbeat, key_count, std::move(args)));
      if (changed.size() > 2) {
        commands.push_back(scriptCommand(ScriptId::kMarkChanged, 2, std::move(changed)));
      }
    }
    for (const ReplicaReport& report : reports) {
      if (report.heartbeat_only) continue;
      if (report.publish_running || report.reconcile_running) {
        // A zero count is a missing field (as release leaves it), keeping the hash small.
        commands.push_back(
            report.running > 0
                ? plainCommand({"HSET", keys_.run(report.model, report.replica), gateway_,
                                std::to_string(report.running)})
                : plainCommand({"HDEL", keys_.run(report.model, report.replica), gateway_}));
      }
      std::string tokens_key = keys_.tokens(report.model, report.replica);
      commands.push_back(plainCommand(
          {"HSET", tokens_key, gateway_,
           fmt::format("{} {} {} {} {} {} {} {}", report.output_tokens, report.prefill_tokens,
                       report.prefill_ns, report.tokenless_requests,
                       report.tokenless_latency_ns, report.token_time_ns, report.timed_tokens,
                       report.token_concurrency)}));
      commands.push_back(
          plainCommand({"PEXPIRE", std::move(tokens_key), std::string(kTokenRetentionMs)}));
    }
    if (commands.empty()) co_return true;
    auto connection = connection_;
    co_return (co_await connection->call(std::move(commands))).has_value();
  }

  asio::awaitable<std::optional<std::vector<ReplicaGlobalView>>> read(
      std::span<const ReplicaReport> replicas) override {
    std::vector<ReplicaGlobalView> views(replicas.size());
    std::vector<ModelGroup> groups = groupByModel(replicas);
    std::vector<RedisCommand> commands;
    for (const ModelGroup& group : groups) {
      std::vector<std::string> args{keys_.live(group.model)};
      for (size_t i : group.indices) {
        views[i].model = replicas[i].model;
        views[i].replica = replicas[i].replica;
        args.push_back(keys_.run(group.model, replicas[i].replica));
        args.push_back(keys_.tokens(group.model, replicas[i].replica));
      }
      const int key_count = static_cast<int>(args.size());
      args.push_back(gateway_);
      commands.push_back(scriptCommand(ScriptId::kRead, key_count, std::move(args)));
    }
    if (commands.empty()) co_return views;
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    if (!replies) co_return std::nullopt;
    for (size_t g = 0; g < groups.size(); ++g) {
      const RedisValue& reply = (*replies)[g];
      if (!reply.isArray()) co_return std::nullopt;
      const auto live = static_cast<int>(reply.integerAt(0, 1));
      const auto rank = static_cast<int>(reply.integerAt(1, 0));
      for (size_t n = 0; n < groups[g].indices.size(); ++n) {
        ReplicaGlobalView& view = views[groups[g].indices[n]];
        const size_t base = 2 + 9 * n;
        view.live_gateways = live;
        view.gateway_rank = rank;
        readView(reply, base, view);
      }
    }
    co_return views;
  }

  asio::awaitable<std::optional<std::vector<ModelChanges>>> readChanges(
      std::span<const ChangeQuery> queries) override {
    std::vector<ModelChanges> answers(queries.size());
    std::vector<RedisCommand> commands;
    for (size_t q = 0; q < queries.size(); ++q) {
      const ChangeQuery& query = queries[q];
      answers[q].model = query.model;
      commands.push_back(scriptCommand(
          ScriptId::kReadChanges, 3,
          {keys_.live(query.model), keys_.version(query.model), keys_.changes(query.model),
           gateway_, std::to_string(query.cursor.version), query.cursor.live_signature,
           keys_.runPrefix(query.model), keys_.tokensPrefix(query.model)}));
    }
    if (commands.empty()) co_return answers;
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    if (!replies) co_return std::nullopt;
    for (size_t q = 0; q < answers.size(); ++q) {
      RedisValue& reply = (*replies)[q];
      if (!reply.isArray() || reply.elements.size() < 5 || (reply.elements.size() - 5) % 10 != 0) {
        co_return std::nullopt;
      }
      ModelChanges& answer = answers[q];
      answer.cursor.version = reply.integerAt(0, 0);
      answer.live_gateways = static_cast<int>(reply.integerAt(1, 1));
      answer.gateway_rank = static_cast<int>(reply.integerAt(2, 0));
      answer.cursor.live_signature = std::move(reply.elements[3].text);
      answer.full = reply.integerAt(4, 0) != 0;
      for (size_t base = 5; base + 9 < reply.elements.size(); base += 10) {
        ReplicaGlobalView& view = answer.replicas.emplace_back();
        view.model = answer.model;
        view.replica = std::move(reply.elements[base].text);
        view.live_gateways = answer.live_gateways;
        view.gateway_rank = answer.gateway_rank;
        readView(reply, base + 1, view);
      }
    }
    co_return answers;
  }

  asio::awaitable<bool> retire(std::span<const ReplicaReport> replicas) override {
    std::vector<RedisCommand> commands;
    for (const ModelGroup& group : groupByModel(replicas)) {
      commands.push_back(plainCommand({"HDEL", keys_.live(group.model), gateway_}));
      std::vector<std::string> slot_keys;
      for (size_t i : group.indices) {
        if (replicas[i].heartbeat_only) continue;
        commands.push_back(
            plainCommand({"HDEL", keys_.run(group.model, replicas[i].replica), gateway_}));
        slot_keys.push_back(keys_.slots(group.model, replicas[i].replica));
      }
      if (!slot_keys.empty()) {
        const int key_count = static_cast<int>(slot_keys.size());
        slot_keys.push_back(slot_prefix_);
        commands.push_back(scriptCommand(ScriptId::kDropSlots, key_count, std::move(slot_keys)));
      }
    }
    if (commands.empty()) co_return true;
    auto connection = connection_;
    co_return (co_await connection->call(std::move(commands))).has_value();
  }

  // One pipelined round trip: XADD (unless nothing to send), the heartbeat script, then XRANGE
  // after the cursor — or, with no cursor yet, XREVRANGE for the newest batches, of which those
  // of the last second are answered. Batches go in and out as plain stream commands: their bytes
  // never pass through the script engine, whose copies dominated Redis's cost at scale.
  asio::awaitable<std::optional<SignalExchange>> exchangeSignals(
      std::string_view payload, std::string_view cursor, TimeNs liveness_ttl) override {
    std::vector<RedisCommand> commands;
    if (!payload.empty()) {
      commands.push_back(plainCommand(
          {"XADD", keys_.signals(), "*", "g", gateway_, "p", std::string(payload)}));
    }
    commands.push_back(scriptCommand(ScriptId::kTelemetryHeartbeat, 2,
                                     {keys_.telemetryLive(), keys_.signals(), gateway_,
                                      std::to_string(toMs(liveness_ttl)),
                                      std::to_string(toMs(kSignalRetention))}));
    const bool newest = cursor.empty();
    const std::string count = std::to_string(kMaxSignalBatches);
    if (newest) {
      commands.push_back(plainCommand({"XREVRANGE", keys_.signals(), "+", "-", "COUNT", count}));
    } else {
      commands.push_back(plainCommand(
          {"XRANGE", keys_.signals(), "(" + std::string(cursor), "+", "COUNT", count}));
    }
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    if (!replies) co_return std::nullopt;
    RedisValue& heartbeat = (*replies)[replies->size() - 2];
    std::vector<RedisValue>& entries = replies->back().elements;
    if (!heartbeat.isArray() || heartbeat.elements.empty() || !replies->back().isArray()) {
      co_return std::nullopt;
    }
    const int64_t now_ms = std::atoll(heartbeat.elements[0].text.c_str());
    SignalExchange exchange;
    exchange.cursor = std::string(cursor);
    for (size_t i = 1; i < heartbeat.elements.size(); ++i) {
      exchange.live_gateways.push_back(std::move(heartbeat.elements[i].text));
    }
    if (newest) std::reverse(entries.begin(), entries.end());
    for (RedisValue& entry : entries) {
      // An entry is [id, [field, value, ...]]; ids are "MS-SEQ": when Redis appended it.
      if (entry.elements.size() != 2 || entry.elements[0].text.empty()) continue;
      exchange.cursor = entry.elements[0].text;
      const int64_t age_ms =
          std::max<int64_t>(0, now_ms - std::atoll(entry.elements[0].text.c_str()));
      if (newest && age_ms > 1000) continue;
      SignalBatch batch;
      batch.age_ms = age_ms;
      std::vector<RedisValue>& fields = entry.elements[1].elements;
      for (size_t f = 0; f + 1 < fields.size(); f += 2) {
        if (fields[f].text == "g") batch.gateway = std::move(fields[f + 1].text);
        if (fields[f].text == "p") batch.payload = std::move(fields[f + 1].text);
      }
      if (batch.gateway == gateway_) continue;  // our own, appended by this or an earlier round
      exchange.batches.push_back(std::move(batch));
    }
    co_return exchange;
  }

  asio::awaitable<std::optional<bool>> holdLease(std::string_view name, TimeNs ttl) override {
    auto commands = single(scriptCommand(ScriptId::kHoldLease, 1,
                                         {keys_.lease(name), gateway_,
                                          std::to_string(toMs(ttl))}));
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    if (!replies || !(*replies)[0].isInteger()) co_return std::nullopt;
    co_return (*replies)[0].integer == 1;
  }

  asio::awaitable<bool> putMark(std::string_view set, std::string_view key,
                                std::string_view value, TimeNs ttl) override {
    auto commands = single(scriptCommand(
        ScriptId::kPutMark, 1,
        {keys_.marks(set), std::string(key), std::string(value),
         std::to_string(ttl <= 0 ? 0 : toMs(ttl))}));
    auto connection = connection_;
    co_return (co_await connection->call(std::move(commands))).has_value();
  }

  asio::awaitable<std::optional<std::vector<Mark>>> readMarks(std::string_view set) override {
    auto commands = single(scriptCommand(ScriptId::kReadMarks, 1, {keys_.marks(set)}));
    auto connection = connection_;
    auto replies = co_await connection->call(std::move(commands));
    if (!replies || !(*replies)[0].isArray()) co_return std::nullopt;
    std::vector<Mark> marks;
    const auto& elements = (*replies)[0].elements;
    for (size_t i = 0; i + 1 < elements.size(); i += 2) {
      marks.push_back({elements[i].text, elements[i + 1].text});
    }
    std::sort(marks.begin(), marks.end(),
              [](const Mark& a, const Mark& b) { return a.key < b.key; });
    co_return marks;
  }

  const SharedStateStats& stats() const override { return connection_->stats(); }

 private:
  std::shared_ptr<RedisConnection> connection_;
  RedisKeys keys_;
  std::string gateway_;
  std::string slot_prefix_;  // this run's slot fields: "GATEWAY#INCARNATION#"
};

class RedisBackend final : public SharedStateBackend {
 public:
  RedisBackend(SharedStateSettings settings, std::string gateway)
      : settings_(std::move(settings)),
        gateway_(std::move(gateway)),
        slot_prefix_(fmt::format("{}#{:08x}#", gateway_, std::random_device{}())) {}

  // Each client (one per worker) leases slots under its own field, "GATEWAY#INCARNATION#N":
  // the incarnation, new at every start, tells a stable gateway id's earlier run apart.
  std::unique_ptr<SharedStateClient> makeClient(asio::any_io_executor executor) override {
    return std::make_unique<RedisClient>(
        RedisConnection::create(std::move(executor), settings_, settings_.call_timeout),
        RedisKeys(settings_.key_prefix), gateway_,
        slot_prefix_ + std::to_string(clients_made_.fetch_add(1)));
  }
  std::unique_ptr<SharedStateSync> makeSync(asio::any_io_executor executor) override {
    return std::make_unique<RedisSync>(
        RedisConnection::create(std::move(executor), settings_, settings_.sync_timeout),
        RedisKeys(settings_.key_prefix), gateway_, slot_prefix_);
  }
  const std::string& gatewayId() const override { return gateway_; }

 private:
  SharedStateSettings settings_;
  std::string gateway_;
  std::string slot_prefix_;
  std::atomic<int> clients_made_{0};
};

}  // namespace

std::shared_ptr<SharedStateBackend> makeRedisBackend(const SharedStateSettings& settings,
                                                     std::string gateway_id) {
  return std::make_shared<RedisBackend>(settings, std::move(gateway_id));
}

}  // namespace switchyard::state
