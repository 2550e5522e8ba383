// The Lua scripts that make the Redis backend's read-check-write steps atomic.
//
// Each script touches only the keys passed to it, all under one model's hash tag (or one job's),
// so it runs on a single Redis Cluster shard. Clock: Redis's own TIME, so every gateway compares
// heartbeats and rate-limit arrival times on one timeline regardless of its own clock (Redis 7
// replicates script effects, which makes TIME usable before writes).
#pragma once

#include <cstdint>
#include <string_view>

namespace switchyard::state::redis {

enum class ScriptId : uint8_t {
  // KEYS: rate, live, run:REPLICA, ver, chg, slots:REPLICA[, quota req, quota tok]. ARGV: gateway,
  // max_inflight, interval_us, tolerance_us, heartbeat ttl_ms, live key expiry ms, replica[, rpm,
  // tpm, tokens]. An admission marks the replica changed (ver, chg).
  // Returns {verdict (0 admitted, 1 in-flight limit, 2 rate limited, 3 a key's budget refused),
  // in-flight sum over live gateways after the call, retry_after_us}, then with the quota keys
  // {quota verdict (0, 1 requests, 2 tokens), remaining requests, remaining tokens,
  // reset_requests_us, reset_tokens_us}. Nothing is written unless every check passes. The
  // in-flight sum counts, per live gateway, the larger of its run count and its leased slots.
  kAdmit,
  // KEYS: run:REPLICA, ver, chg. ARGV: gateway, replica. Decrements this gateway's count, never
  // below zero, and marks the replica changed.
  kRelease,
  // KEYS: live, then the run:REPLICA keys this gateway reports, then their slots:REPLICA keys.
  // ARGV: gateway, ttl_ms, reap_after_ms, this run's slot field prefix ("GATEWAY#INCARNATION#"),
  // index of the first slots key. Renews this gateway's heartbeat; drops gateways dead for
  // reap_after_ms, and slot leases of gateways no longer in `live` or of this gateway's earlier
  // runs.
  kHeartbeat,
  // KEYS: live, then run:REPLICA, tok:REPLICA per replica. ARGV: gateway.
  // Returns {live gateways (this one included), then per replica: others_running, output tokens,
  // prefill tokens, prefill ns, tokenless requests, tokenless ns}.
  kRead,
  // KEYS: sess:SESSION. ARGV: expected, replica, ttl_ms. Returns the pin in force afterwards.
  kPinSession,
  // KEYS: job:{ID}. ARGV: model, replica, ttl_ms.
  kRecordJob,
  // KEYS: quota req, quota tok. ARGV: rpm, tpm, tokens. A key's budgets alone: returns {quota
  // verdict, remaining requests, remaining tokens, retry_after_us, reset_requests_us,
  // reset_tokens_us} and debits both only when both allow it.
  kQuota,
  // KEYS: a quota bucket. ARGV: limit per minute, delta units. Adds (or refunds) units.
  kQuotaSettle,
  // KEYS: telemetry live hash, signals stream. ARGV: gateway, ttl_ms, retention_ms. Renews the
  // gateway's telemetry heartbeat, trims the stream to the retention, returns {now_ms, live
  // ids...}. The batches themselves are appended and read with plain XADD / XRANGE pipelined
  // around it, so their bytes never pass through the script engine.
  kTelemetryHeartbeat,
  // KEYS: ver, chg. ARGV: replicas. Bumps the model's version and marks the replicas changed.
  kMarkChanged,
  // KEYS: live, ver, chg. ARGV: gateway, since_version (-1: all), live signature seen, run key
  // prefix, tok key prefix. Returns {version, live count, rank, live signature, full (0/1), then
  // per replica changed since `since_version` (all when full): name, others_running, 8 sums}.
  kReadChanges,
  // KEYS: lease:{NAME}. ARGV: gateway, ttl_ms. Takes or renews the lease if free or this
  // gateway's. Returns 1 if this gateway holds it afterwards, else 0.
  kHoldLease,
  // KEYS: marks:{SET}. ARGV: key, value, ttl_ms (<= 0 removes). Stores "deadline_ms value".
  kPutMark,
  // KEYS: marks:{SET}. Returns {key, value, key, value, ...} of the unexpired entries and
  // removes the expired ones.
  kReadMarks,
  // KEYS: live, run:REPLICA, slots:REPLICA[, quota req, quota tok]. ARGV: gateway, slot field,
  // max_inflight, wanted slots, heartbeat ttl_ms, live key expiry ms[, rpm, tpm, tokens].
  // Leases up to `wanted` more slots of the replica's in-flight limit to the field, as many as
  // fit under the limit across live gateways, if the key's budgets allow the request too.
  // Returns {slots granted (0: none), in-flight sum, the field's slots after}, then with the
  // quota keys {quota verdict, remaining requests, remaining tokens, reset_requests_us,
  // reset_tokens_us, retry_after_us}. Nothing is written unless every check passes.
  kGrowSlots,
  // KEYS: slots:REPLICA. ARGV: slot field, delta. Adds delta (negative: gives slots back);
  // removes the field at zero. Returns the field's slots after.
  kChangeSlots,
  // KEYS: slots:REPLICA keys. ARGV: field prefix. Removes every field with the prefix.
  kDropSlots,
};
inline constexpr size_t kScriptCount = static_cast<size_t>(ScriptId::kDropSlots) + 1;

std::string_view scriptSource(ScriptId script);

}  // namespace switchyard::state::redis
