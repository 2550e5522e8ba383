#include "state/redis/redis_scripts.h"

#include <initializer_list>
#include <string>

namespace switchyard::state::redis {
namespace {

// Shared prologue: the current time from Redis, and the set of gateways whose heartbeat in
// KEYS[live] is current. Lua numbers are doubles: microseconds since 1970 fit in 53 bits.
#define SY_NOW_AND_LIVE(LIVE_KEY)                                         \
  "local t = redis.call('TIME')\n"                                        \
  "local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"            \
  "local now_ms = math.floor(now_us / 1000)\n"                            \
  "local gw = ARGV[1]\n"                                                  \
  "local live = {}\n"                                                     \
  "local hb = redis.call('HGETALL', " LIVE_KEY ")\n"                      \
  "for i = 1, #hb, 2 do\n"                                                \
  "  if tonumber(hb[i + 1]) >= now_ms then live[hb[i]] = true end\n"      \
  "end\n"                                                                 \
  "live[gw] = true\n"

// A key's per-minute budgets (auth/quota_bucket.h in microseconds): a bucket's key holds the
// time at which it is full again. sy_quota checks both budgets and returns the values to write
// (nil when refused): the caller writes them only if every other check passes too.
#define SY_QUOTA_FUNCTIONS                                                               \
  "local function sy_remaining(now_us, tat, unit, limit)\n"                              \
  "  local room = now_us + 60000000 - tat\n"                                             \
  "  if room <= 0 then return 0 end\n"                                                   \
  "  return math.min(limit, math.floor(room / unit))\n"                                  \
  "end\n"                                                                                \
  "local function sy_bucket(key, limit, cost, now_us)\n"                                 \
  "  if limit <= 0 then return true, nil, -1, 0, 0 end\n"                                \
  "  local unit = 60000000 / limit\n"                                                    \
  "  local cost_us = math.min(60000000, cost * unit)\n"                                  \
  "  local start = math.max(tonumber(redis.call('GET', key) or '0'), now_us)\n"          \
  "  local after = start + cost_us\n"                                                    \
  "  if after - now_us > 60000000 then\n"                                                \
  "    return false, nil, sy_remaining(now_us, start, unit, limit),\n"                   \
  "           after - now_us - 60000000, start - now_us\n"                               \
  "  end\n"                                                                              \
  "  return true, after, sy_remaining(now_us, after, unit, limit), 0, after - now_us\n"   \
  "end\n"                                                                                \
  "local function sy_quota(req_key, tok_key, rpm, tpm, tokens, now_us)\n"                \
  "  local rok, rtat, rrem, rretry, rreset = sy_bucket(req_key, rpm, 1, now_us)\n"       \
  "  if not rok then\n"                                                                  \
  "    local _, _, trem, _, treset = sy_bucket(tok_key, tpm, 0, now_us)\n"               \
  "    return {1, rrem, trem, rretry, rreset, treset}\n"                                 \
  "  end\n"                                                                              \
  "  local tok, ttat, trem, tretry, treset = sy_bucket(tok_key, tpm, tokens, now_us)\n"  \
  "  if not tok then\n"                                                                  \
  "    local _, _, rrem0, _, rreset0 = sy_bucket(req_key, rpm, 0, now_us)\n"             \
  "    return {2, rrem0, trem, tretry, rreset0, treset}\n"                               \
  "  end\n"                                                                              \
  "  return {0, rrem, trem, 0, rreset, treset}, rtat, ttat\n"                            \
  "end\n"                                                                                \
  "local function sy_commit(key, tat, now_us)\n"                                         \
  "  if tat then\n"                                                                      \
  "    redis.call('SET', key, string.format('%.0f', tat), 'PX',\n"                       \
  "               math.floor((tat - now_us) / 1000) + 1000)\n"                           \
  "  end\n"                                                                              \
  "end\n"

// A replica's in-flight count across live gateways (after SY_NOW_AND_LIVE): per gateway, the
// larger of its count in run:REPLICA and the slots its workers lease in slots:REPLICA (fields
// "GATEWAY#INCARNATION#WORKER"), so a gateway admitting within leased slots counts for all of
// them, one admitting request by request for its requests.
#define SY_INFLIGHT_FUNCTION                                                         \
  "local function sy_inflight(run_key, slots_key)\n"                                 \
  "  local per = {}\n"                                                               \
  "  local runs = redis.call('HGETALL', run_key)\n"                                  \
  "  for i = 1, #runs, 2 do\n"                                                       \
  "    if live[runs[i]] then per[runs[i]] = tonumber(runs[i + 1]) end\n"            \
  "  end\n"                                                                          \
  "  local held = {}\n"                                                              \
  "  local slots = redis.call('HGETALL', slots_key)\n"                               \
  "  for i = 1, #slots, 2 do\n"                                                      \
  "    local g = string.match(slots[i], '^(.*)#[^#]*#[^#]*$')\n"                     \
  "    if g and live[g] then held[g] = (held[g] or 0) + tonumber(slots[i + 1]) end\n" \
  "  end\n"                                                                          \
  "  local sum = 0\n"                                                                \
  "  for g, n in pairs(per) do sum = sum + math.max(n, held[g] or 0) end\n"          \
  "  for g, n in pairs(held) do if per[g] == nil then sum = sum + n end end\n"       \
  "  return sum\n"                                                                   \
  "end\n"

// Admitting (or leasing slots) makes this gateway live at once, so the others count its
// requests from the first one on. Renewed once half the TTL has passed, to spare a write.
#define SY_RENEW_FUNCTION                                                              \
  "local function sy_renew(live_key, ttl, expiry)\n"                                   \
  "  if ttl <= 0 then return end\n"                                                   \
  "  local deadline = now_ms + ttl\n"                                                 \
  "  if tonumber(redis.call('HGET', live_key, gw) or '0') < deadline - ttl / 2 then\n" \
  "    redis.call('HSET', live_key, gw, string.format('%.0f', deadline))\n"            \
  "    redis.call('PEXPIRE', live_key, expiry)\n"                                     \
  "  end\n"                                                                           \
  "end\n"

constexpr std::string_view kAdmitSource = SY_NOW_AND_LIVE("KEYS[2]") SY_QUOTA_FUNCTIONS
    SY_INFLIGHT_FUNCTION SY_RENEW_FUNCTION R"lua(
local limit = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local tolerance = tonumber(ARGV[4])
local sum = sy_inflight(KEYS[3], KEYS[6])
local new_tat = nil
if interval > 0 then
  local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
  local start = math.max(tat, now_us)
  if start - now_us > tolerance then return {2, sum, start - now_us - tolerance} end
  new_tat = start + interval
end
if limit > 0 and sum >= limit then return {1, sum, 0} end
local quota, req_tat, tok_tat = nil, nil, nil
if #KEYS >= 8 then
  quota, req_tat, tok_tat = sy_quota(KEYS[7], KEYS[8], tonumber(ARGV[8]), tonumber(ARGV[9]),
                                     tonumber(ARGV[10]), now_us)
  if quota[1] ~= 0 then
    return {3, sum, quota[4], quota[1], quota[2], quota[3], quota[5], quota[6]}
  end
  sy_commit(KEYS[7], req_tat, now_us)
  sy_commit(KEYS[8], tok_tat, now_us)
end
sy_renew(KEYS[2], tonumber(ARGV[5]), tonumber(ARGV[6]))
if new_tat then
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX',
             math.floor((new_tat - now_us) / 1000) + 1000)
end
redis.call('HINCRBY', KEYS[3], gw, 1)
redis.call('ZADD', KEYS[5], redis.call('INCR', KEYS[4]), ARGV[7])
if quota then return {0, sum + 1, 0, 0, quota[2], quota[3], quota[5], quota[6]} end
return {0, sum + 1, 0}
)lua";

constexpr std::string_view kGrowSlotsSource = SY_NOW_AND_LIVE("KEYS[1]") SY_QUOTA_FUNCTIONS
    SY_INFLIGHT_FUNCTION SY_RENEW_FUNCTION R"lua(
local limit = tonumber(ARGV[3])
local sum = sy_inflight(KEYS[2], KEYS[3])
local grant = math.min(tonumber(ARGV[4]), limit - sum)
local function held_now() return tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0') end
if grant <= 0 then return {0, sum, held_now()} end
local quota = nil
if #KEYS >= 5 then
  local req_tat, tok_tat
  quota, req_tat, tok_tat = sy_quota(KEYS[4], KEYS[5], tonumber(ARGV[7]), tonumber(ARGV[8]),
                                     tonumber(ARGV[9]), now_us)
  if quota[1] ~= 0 then
    return {0, sum, held_now(), quota[1], quota[2], quota[3], quota[5], quota[6], quota[4]}
  end
  sy_commit(KEYS[4], req_tat, now_us)
  sy_commit(KEYS[5], tok_tat, now_us)
end
sy_renew(KEYS[1], tonumber(ARGV[5]), tonumber(ARGV[6]))
local held = redis.call('HINCRBY', KEYS[3], ARGV[2], grant)
if quota then return {grant, sum + grant, held, 0, quota[2], quota[3], quota[5], quota[6], 0} end
return {grant, sum + grant, held}
)lua";

constexpr std::string_view kChangeSlotsSource = R"lua(
local held = redis.call('HINCRBY', KEYS[1], ARGV[1], tonumber(ARGV[2]))
if held <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return held
)lua";

constexpr std::string_view kDropSlotsSource = R"lua(
for k = 1, #KEYS do
  for _, field in ipairs(redis.call('HKEYS', KEYS[k])) do
    if string.sub(field, 1, #ARGV[1]) == ARGV[1] then redis.call('HDEL', KEYS[k], field) end
  end
end
return 1
)lua";

constexpr std::string_view kQuotaSource = SY_QUOTA_FUNCTIONS R"lua(
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local quota, req_tat, tok_tat = sy_quota(KEYS[1], KEYS[2], tonumber(ARGV[1]),
                                         tonumber(ARGV[2]), tonumber(ARGV[3]), now_us)
if quota[1] == 0 then
  sy_commit(KEYS[1], req_tat, now_us)
  sy_commit(KEYS[2], tok_tat, now_us)
end
return quota
)lua";

constexpr std::string_view kQuotaSettleSource = R"lua(
local limit = tonumber(ARGV[1])
if limit <= 0 then return 0 end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local move = tonumber(ARGV[2]) * 60000000 / limit
move = math.max(-3600000000, math.min(3600000000, move))
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') + move
if tat <= now_us then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.floor((tat - now_us) / 1000) + 1000)
return 1
)lua";

constexpr std::string_view kReleaseSource = R"lua(
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[2]), ARGV[2])
return 0
)lua";

// Marks replicas whose counts a publish wrote as changed, for readers of changes.
constexpr std::string_view kMarkChangedSource = R"lua(
local v = redis.call('INCR', KEYS[1])
for i = 1, #ARGV do redis.call('ZADD', KEYS[2], v, ARGV[i]) end
return v
)lua";

constexpr std::string_view kHeartbeatSource = R"lua(
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local reap_before = now_ms - tonumber(ARGV[3])
local first_slots = tonumber(ARGV[5])
local kept = {}
local hb = redis.call('HGETALL', KEYS[1])
for i = 1, #hb, 2 do
  if hb[i] ~= ARGV[1] and tonumber(hb[i + 1]) < reap_before then
    redis.call('HDEL', KEYS[1], hb[i])
    for k = 2, first_slots - 1 do redis.call('HDEL', KEYS[k], hb[i]) end
  else
    kept[hb[i]] = true
  end
end
-- Slot leases: those of reaped (or never live) gateways, and this gateway's from an earlier
-- run (another incarnation), go.
for k = first_slots, #KEYS do
  for _, field in ipairs(redis.call('HKEYS', KEYS[k])) do
    local g = string.match(field, '^(.*)#[^#]*#[^#]*$')
    local stale
    if g == ARGV[1] then
      stale = string.sub(field, 1, #ARGV[4]) ~= ARGV[4]
    else
      stale = g == nil or not kept[g]
    end
    if stale then redis.call('HDEL', KEYS[k], field) end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', now_ms + ttl))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) + ttl)
return 1
)lua";

// Shared by read and read changes (after SY_NOW_AND_LIVE): the live set sorted with this
// gateway's rank in it, and one replica's view (the others' live in-flight sum, the token sums).
constexpr std::string_view kViewHelpers = R"lua(
local function liveNames()
  local names = {}
  for name in pairs(live) do names[#names + 1] = name end
  table.sort(names)
  local rank = 0
  for i = 1, #names do
    if names[i] == gw then rank = i - 1 end
  end
  return names, rank
end
local function replicaView(out, run_key, tok_key)
  local others = 0
  local runs = redis.call('HGETALL', run_key)
  for i = 1, #runs, 2 do
    if runs[i] ~= gw and live[runs[i]] then others = others + tonumber(runs[i + 1]) end
  end
  local sums = {0, 0, 0, 0, 0, 0, 0, 0}
  for _, v in ipairs(redis.call('HVALS', tok_key)) do
    local j = 1
    for n in string.gmatch(v, '%S+') do
      if j <= 8 then sums[j] = sums[j] + (tonumber(n) or 0) end
      j = j + 1
    end
  end
  out[#out + 1] = others
  for j = 1, 8 do out[#out + 1] = sums[j] end
end
)lua";

constexpr std::string_view kReadBody = R"lua(
local names, rank = liveNames()
local out = {#names, rank}
for k = 2, #KEYS, 2 do replicaView(out, KEYS[k], KEYS[k + 1]) end
return out
)lua";

// Only the replicas changed since the reader's version, unless the live set differs from the
// one it saw (others' counts start or stop counting) or the version went back (shared state was
// reset): then every replica that ever changed. The run and tok keys are built from the prefixes
// in ARGV; they carry the model's hash tag like the declared keys, so they live on one shard.
constexpr std::string_view kReadChangesBody = R"lua(
local names, rank = liveNames()
local signature = table.concat(names, ',')
local version = tonumber(redis.call('GET', KEYS[2]) or '0')
local since = tonumber(ARGV[2])
local full = signature ~= ARGV[3] or since < 0 or since > version
local out = {version, #names, rank, signature, full and 1 or 0}
if (not full) and since == version then return out end
local members
if full then
  members = redis.call('ZRANGE', KEYS[3], 0, -1)
else
  members = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. since, '+inf')
end
for _, replica in ipairs(members) do
  out[#out + 1] = replica
  replicaView(out, ARGV[4] .. replica, ARGV[5] .. replica)
end
return out
)lua";

constexpr std::string_view kPinSessionSource = R"lua(
local current = redis.call('GET', KEYS[1])
if (not current) or current == '' or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return ARGV[2]
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return current
)lua";

constexpr std::string_view kRecordJobSource = R"lua(
redis.call('HSET', KEYS[1], 'model', ARGV[1], 'replica', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
)lua";

// The live set is fleet-wide (not per model): it decides which gateway scrapes which replica.
// Batches are trimmed by age (MINID), so a reader that fell behind loses only what is too old
// to be fresh anyway. The stream's expiry covers a fleet whose gateways all stopped.
constexpr std::string_view kTelemetryHeartbeatSource = R"lua(
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gw = ARGV[1]
local ttl = tonumber(ARGV[2])
local retention = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], gw, string.format('%.0f', now_ms + ttl))
redis.call('PEXPIRE', KEYS[1], ttl * 10)
local live = {}
local hb = redis.call('HGETALL', KEYS[1])
for i = 1, #hb, 2 do
  local deadline = tonumber(hb[i + 1])
  if deadline >= now_ms then
    live[#live + 1] = hb[i]
  elseif deadline < now_ms - ttl * 10 then
    redis.call('HDEL', KEYS[1], hb[i])
  end
end
table.sort(live)
redis.call('XTRIM', KEYS[2], 'MINID', '~', string.format('%.0f', now_ms - retention))
redis.call('PEXPIRE', KEYS[2], retention * 2)
local out = {string.format('%.0f', now_ms)}
for i = 1, #live do out[#out + 1] = live[i] end
return out
)lua";

constexpr std::string_view kNowAndLive = SY_NOW_AND_LIVE("KEYS[1]");

constexpr std::string_view kHoldLeaseSource = R"lua(
local holder = redis.call('GET', KEYS[1])
if (not holder) or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
)lua";

constexpr std::string_view kPutMarkSource = R"lua(
local ttl = tonumber(ARGV[3])
if ttl <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', now_ms + ttl) .. ' ' .. ARGV[2])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
)lua";

constexpr std::string_view kReadMarksSource = R"lua(
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  local v = entries[i + 1]
  local space = string.find(v, ' ', 1, true)
  local deadline = tonumber(space and string.sub(v, 1, space - 1) or v) or 0
  if deadline > now_ms then
    out[#out + 1] = entries[i]
    out[#out + 1] = space and string.sub(v, space + 1) or ''
  else
    redis.call('HDEL', KEYS[1], entries[i])
  end
end
return out
)lua";

#undef SY_NOW_AND_LIVE
#undef SY_QUOTA_FUNCTIONS
#undef SY_INFLIGHT_FUNCTION
#undef SY_RENEW_FUNCTION

std::string joined(std::initializer_list<std::string_view> parts) {
  std::string text;
  for (std::string_view part : parts) text.append(part);
  return text;
}

}  // namespace

std::string_view scriptSource(ScriptId script) {
  switch (script) {
    case ScriptId::kAdmit: return kAdmitSource;
    case ScriptId::kRelease: return kReleaseSource;
    case ScriptId::kHeartbeat: return kHeartbeatSource;
    case ScriptId::kRead: {
      static const std::string source = joined({kNowAndLive, kViewHelpers, kReadBody});
      return source;
    }
    case ScriptId::kPinSession: return kPinSessionSource;
    case ScriptId::kRecordJob: return kRecordJobSource;
    case ScriptId::kQuota: return kQuotaSource;
    case ScriptId::kQuotaSettle: return kQuotaSettleSource;
    case ScriptId::kTelemetryHeartbeat: return kTelemetryHeartbeatSource;
    case ScriptId::kMarkChanged: return kMarkChangedSource;
    case ScriptId::kReadChanges: {
      static const std::string source = joined({kNowAndLive, kViewHelpers, kReadChangesBody});
      return source;
    }
    case ScriptId::kHoldLease: return kHoldLeaseSource;
    case ScriptId::kPutMark: return kPutMarkSource;
    case ScriptId::kReadMarks: return kReadMarksSource;
    case ScriptId::kGrowSlots: return kGrowSlotsSource;
    case ScriptId::kChangeSlots: return kChangeSlotsSource;
    case ScriptId::kDropSlots: return kDropSlotsSource;
  }
  return {};
}

}  // namespace switchyard::state::redis
