// The Redis backend of SharedState (hiredis 0.14, driven by Asio: see redis_connection.h).
//
// Key layout. PREFIX is SharedStateSettings::key_prefix ("sy"). Every key of a model carries the
// model as its FIRST hash tag, so a Redis Cluster keeps everything one script touches on one
// shard; a job's key is tagged with the job id.
//
//   PREFIX:{MODEL}:live             hash  gateway → heartbeat deadline (ms, Redis TIME)
//   PREFIX:{MODEL}:run:REPLICA      hash  gateway → in-flight requests on the replica
//   PREFIX:{MODEL}:slots:REPLICA    hash  "GATEWAY#INCARNATION#WORKER" → in-flight slots that
//                                         worker leases (admits within them without a call)
//   PREFIX:{MODEL}:tok:REPLICA      hash  gateway → "output prefill_tokens prefill_ns
//                                         tokenless_n tokenless_ns" (cumulative); the key
//                                         expires 1 h after the last publish
//   PREFIX:{MODEL}:rate             string GCRA theoretical arrival time (µs, Redis TIME)
//   PREFIX:{MODEL}:sess:SESSION     string replica; sliding TTL (GETEX PX on lookup)
//   PREFIX:job:{JOB}                hash  model, replica; TTL
//   PREFIX:{MODEL}:ver              string the model's change version (admit, release, publish)
//   PREFIX:{MODEL}:chg              zset  replica → version of its last change (readChanges)
//   PREFIX:{telemetry}:live         hash  gateway → telemetry heartbeat deadline (ms)
//   PREFIX:{telemetry}:signals      stream one entry per shared batch of scraped signals
//                                         (fields g: gateway, p: payload), trimmed by age
//   PREFIX:lease:{NAME}             string the gateway holding the lease; TTL
//   PREFIX:marks:{SET}              hash  key → "deadline_ms value" (coordination marks)
//
// A gateway counts in others' admissions and reads only while its heartbeat in `live` is
// current (the sync publishes it); its own counts always count for itself. The atomic steps are
// Lua scripts (redis_scripts.h), sent as EVALSHA once SCRIPT LOAD has answered, as EVAL before
// that or after NOSCRIPT.
//
// Each client and each sync owns one connection; see SharedStateSettings for the deadlines.
// Clients and syncs must be destroyed before their io_context.
#pragma once

#include <memory>
#include <string>

#include "state/shared_state.h"

namespace switchyard::state {

std::shared_ptr<SharedStateBackend> makeRedisBackend(const SharedStateSettings& settings,
                                                     std::string gateway_id);

}  // namespace switchyard::state
