// The profile's JSON form (docs/optimizer.md, "Profile format"): AIBrix's fields — `gpu`, `cost`,
// `tputs[out][in]`, `indexes` [[outputs], [prompts]], `slos`, `created`, optional `e2e`, `ttft`,
// `tpot` matrices — plus Switchyard's `deployment`, `model`, `format` and `steps[out][in]`.
//
// Parsing accepts AIBrix's own profiles: a missing `deployment` is taken from `gpu` (AIBrix
// stores the deployment name there), grid values may be floats (rounded), unknown keys and SLO
// kinds Switchyard does not check (tput, tt, tpat) are ignored. Errors are values naming the
// offending field; nothing throws. Start-up/reload code only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/json_util.h"
#include "profile/profile.h"

namespace switchyard::profile {

struct ProfileParse {
  std::optional<GpuProfile> profile;  // validated and indexed
  std::string error;
};

ProfileParse parseProfileJson(std::string_view json);
std::string profileToJson(const GpuProfile& profile);

}  // namespace switchyard::profile

namespace switchyard::profile {
// One step as a JSON object (shared with the raw measurement file).
void appendStepJson(std::string& out, const Step& step);
void appendStepsJson(std::string& out, const std::vector<Step>& steps);
bool parseStepJson(simdjson::dom::element element, Step& step, std::string* error);
}  // namespace switchyard::profile
