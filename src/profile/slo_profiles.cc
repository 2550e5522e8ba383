#include "profile/slo_profiles.h"

#include <algorithm>
#include <cctype>

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

}  // namespace switchyard::profile
