#include "profile/slo_profiles.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace switchyard::profile {

const GpuProfile* SloProfiles::forGpu(std::string_view gpu) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].size() == gpu.size() &&
        std::equal(gpu.begin(), gpu.end(), gpus[i].begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return &profiles[i];
    }
  }
  return nullptr;
}

void SloProfiles::findReservedTypes() {
  reserved.assign(profiles.size(), 0);
  if (profiles.size() < 2) return;  // one type: nothing to keep free for anything else
  std::set<int> prompts;
  std::set<int> outputs;
  for (const GpuProfile& p : profiles) {
    prompts.insert(p.prompts.begin(), p.prompts.end());
    outputs.insert(p.outputs.begin(), p.outputs.end());
  }
  for (const int prompt : prompts) {
    for (const int output : outputs) {
      int capable = -1;
      int count = 0;
      for (size_t i = 0; i < profiles.size(); ++i) {
        if (profiles[i].maxRate(prompt, output) > 0) {
          capable = static_cast<int>(i);
          ++count;
        }
      }
      if (count == 1) reserved[static_cast<size_t>(capable)] = 1;
    }
  }
}

}  // namespace switchyard::profile
