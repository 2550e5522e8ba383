// SloProfiles: what SLO routing knows about one model — the objective it holds requests to and
// one measured profile per GPU type (the replicas' `gpu` label). Built at config load (from
// profile files, or from the engine model like `gen-profile --emulated`) and immutable after:
// shared by every snapshot of the model and read by any thread.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // reserved[i]: profiles[i]'s GPU type is the only one that can serve some shape of the
  // profiles' grids in time (see findReservedTypes). Empty until findReservedTypes runs.
  std::vector<uint8_t> reserved;

  // The profile of GPU type `gpu` (case-insensitive), nullptr when none.
  const GpuProfile* forGpu(std::string_view gpu) const;
  // Whether `profile` (one of `profiles`) is reserved.
  bool isReserved(const GpuProfile& profile) const {
    const ptrdiff_t i = &profile - profiles.data();
    return i >= 0 && static_cast<size_t>(i) < reserved.size() && reserved[i] != 0;
  }
  // Marks the GPU types some shape needs: for every prompt and output size on any profile's
  // grid, the types whose profile promises a rate within the SLO there (maxRate > 0); a shape
  // with exactly one such type reserves it. A shape no type serves in time reserves none (which
  // misses it least depends on the load, which routing predicts per request). Call after the
  // profiles are indexed.
  void findReservedTypes();
};

}  // namespace switchyard::profile
