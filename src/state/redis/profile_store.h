// Profiles in Redis under AIBrix's key, `aibrix:profile_<model>_<deployment>` (a plain string
// holding the profile's JSON, no expiry), so AIBrix's optimizer and Switchyard's read each
// other's; and one loader for a profile *source* as the CLI and the optimize config name it: a
// file path, or `redis://host:port[/db]?model=M` (then the deployment picks the key).
// Blocking calls with timeouts: start-up, reload and command-line use only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "profile/profile_json.h"
#include "state/redis/blocking_redis.h"

namespace switchyard::state::redis {

std::string profileKey(std::string_view model, std::string_view deployment);

// SET the profile's JSON under profileKey(url.model or profile.model, profile.deployment).
bool storeProfile(const RedisUrl& url, const profile::GpuProfile& profile, std::string* error,
                  std::string* key_out = nullptr);

// A file or a Redis URL. For Redis, `deployment` names the key (with the URL's model, or
// `model` when the URL has none). Errors name the source.
profile::ProfileParse loadProfileSource(const std::string& source, std::string_view deployment,
                                        std::string_view model = {});

}  // namespace switchyard::state::redis
