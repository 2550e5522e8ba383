// SharedStateNotice: logs when this worker's shared-state calls start or stop degrading, once
// per episode (not per call). Worker thread only.
#pragma once

#include <spdlog/spdlog.h>

namespace switchyard::gateway {

class SharedStateNotice {
 public:
  explicit SharedStateNotice(int worker) : worker_(worker) {}
  void note(bool degraded) {
    if (degraded == degraded_) return;
    degraded_ = degraded;
    if (degraded) {
      spdlog::warn("worker {}: shared state is not answering; deciding locally", worker_);
    } else {
      spdlog::info("worker {}: shared state answers again", worker_);
    }
  }

 private:
  int worker_;
  bool degraded_ = false;
};

}  // namespace switchyard::gateway
