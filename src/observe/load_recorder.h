// LoadRecorder: the hot-path half of request monitoring (docs/optimizer.md, "Request
// monitoring"). One per worker; per model (by the metrics registry's stable model slot) a fixed
// array of cumulative counters: one per request-shape cell (load_shape.h) for completed
// requests, plus failed (5xx or no answer) and rejected (429) counts.
//
// Hot path (owner thread): record() is one relaxed fetch_add on the worker's own array — no
// lock, no allocation. block() allocates only the first time a worker meets a model slot (like
// WorkerMetrics::bind), under a mutex the control plane also takes to read.
// Control plane (any thread): sum() adds every worker's counters for a slot; the monitor
// subtracts the previous sum to get one interval (counters are monotonic).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "observe/load_shape.h"

namespace switchyard::observe {

struct LoadBlock {
  std::array<std::atomic<uint32_t>, kShapeCells> cells{};
  std::atomic<uint32_t> failed{0};
  std::atomic<uint32_t> rejected{0};

  void completed(int64_t prompt_tokens, int64_t output_tokens) {
    cells[static_cast<size_t>(shapeCell(prompt_tokens, output_tokens))].fetch_add(
        1, std::memory_order_relaxed);
  }
};

// Totals of one model over every worker, at one moment.
struct LoadTotals {
  std::vector<uint32_t> cells = std::vector<uint32_t>(kShapeCells, 0);
  uint32_t failed = 0;
  uint32_t rejected = 0;
};

class LoadRecorder {
 public:
  // Owner thread. The block of `model_slot`, created on first use.
  LoadBlock* block(uint32_t model_slot) {
    if (model_slot < owned_.size() && owned_[model_slot] != nullptr) return owned_[model_slot];
    std::lock_guard lock(mutex_);
    if (model_slot >= blocks_.size()) blocks_.resize(model_slot + 1);
    if (!blocks_[model_slot]) blocks_[model_slot] = std::make_unique<LoadBlock>();
    if (model_slot >= owned_.size()) owned_.resize(model_slot + 1, nullptr);
    owned_[model_slot] = blocks_[model_slot].get();
    return owned_[model_slot];
  }

  // Any thread: adds this worker's counters of `model_slot` into `totals`.
  void addTo(uint32_t model_slot, LoadTotals& totals) const {
    std::lock_guard lock(mutex_);
    if (model_slot >= blocks_.size() || !blocks_[model_slot]) return;
    const LoadBlock& b = *blocks_[model_slot];
    for (size_t i = 0; i < kShapeCells; ++i) {
      totals.cells[i] += b.cells[i].load(std::memory_order_relaxed);
    }
    totals.failed += b.failed.load(std::memory_order_relaxed);
    totals.rejected += b.rejected.load(std::memory_order_relaxed);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<LoadBlock>> blocks_;  // by model slot; blocks never move
  std::vector<LoadBlock*> owned_;                   // the owner's lock-free view
};

}  // namespace switchyard::observe
