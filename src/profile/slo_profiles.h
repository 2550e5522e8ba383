// SloProfiles: what SLO routing knows about one model — the objective it holds requests to and
// one measured profile per GPU type (the replicas' `gpu` label). Built at config load (from
// profile files, or from the engine model like `gen-profile --emulated`) and immutable after:
// shared by every snapshot of the model and read by any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "profile/profile.h"

namespace switchyard::profile {

struct SloProfiles {
  Slo objective;
  std::vector<std::string> gpus;     // GPU type each profile serves, as the label names it
  std::vector<GpuProfile> profiles;  // indexed (GpuProfile::index() has run)

  // The profile of GPU type `gpu` (case-insensitive), nullptr when none.
  const GpuProfile* forGpu(std::string_view gpu) const;
};

}  // namespace switchyard::profile
