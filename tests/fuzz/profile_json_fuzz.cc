// Fuzz target: the profile formats — a profile (AIBrix's fields and Switchyard's steps), raw
// sweep measurements, and SLO text. Whatever parses must validate, survive a round trip to the
// same text, and answer lookups with finite, non-negative rates.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "profile/profile_json.h"
#include "profile/raw_profile.h"

namespace {
void check(bool condition) {
  if (!condition) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::profile;
  const std::string text(reinterpret_cast<const char*>(data), size);
  ProfileParse parsed = parseProfileJson(text);
  if (parsed.profile) {
    const GpuProfile& p = *parsed.profile;
    check(p.validate().empty());
    const std::string again = profileToJson(p);
    ProfileParse second = parseProfileJson(again);
    check(second.profile.has_value());
    check(profileToJson(*second.profile) == again);
    for (double prompt : {1.0, 100.0, 5000.0, 1e7}) {
      const double rate = p.maxRate(prompt, prompt / 3 + 1);
      check(std::isfinite(rate) && rate >= 0);
      p.predict(prompt, 64, prompt / 100);
    }
  } else {
    check(!parsed.error.empty());
  }
  std::string error;
  if (auto raw = parseRawJson(text, &error)) {
    const GpuProfile built = buildProfile(*raw, {"d", "g", "", 1, 0}, Slo{0, 0.05, 0, 99});
    (void)built.maxRate(128, 16);
    check(parseRawJson(rawToJson(*raw), &error).has_value());
  }
  if (size < 256) (void)Slo::parse(text, &error);
  return 0;
}
