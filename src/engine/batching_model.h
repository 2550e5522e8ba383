// BatchingModel: an EngineModel that behaves like a continuous-batching engine (vLLM V1's
// scheduler, simplified) with step durations from a roofline of the GPU's spec-sheet figures.
//
// Scheduling, once per step (a step starts when the previous one ends, or on a submit when idle):
//  - running requests first, in admission order: a decoding request needs one token, a request
//    still in (chunked) prefill needs min(remaining prompt, token budget); the token budget per
//    step is max_num_batched_tokens. A request whose new tokens need KV blocks that are not free
//    preempts the newest running request (recompute: its blocks are freed and it goes back to the
//    front of the waiting queue), repeatedly, possibly itself;
//  - then, if nothing was preempted, waiting requests in FIFO order while the batch has fewer
//    than max_num_seqs requests, budget is left and their blocks can be allocated. With prefix
//    caching, the leading prompt blocks already cached are reused and not prefilled again.
// KV cache: fixed-size blocks (PerfConfig::block_size tokens); a request holds
// ceil(computed tokens / block size) blocks. Full prompt blocks become shared cache entries;
// unreferenced entries stay cached (counted as free) until evicted least-recently-used first.
//
// Step duration (the roofline), for T tokens in the batch attending to C context tokens:
//   compute = 2 * params * T / (peak FLOPs * compute efficiency)
//   memory  = (weight bytes + C * KV bytes per token) / (bandwidth * bandwidth efficiency)
//   step    = (max(compute, memory) + per-step overhead) * slowdown
// At the end of a step every request whose known tokens are all computed samples one token.
//
// Pure and deterministic: no clock, no randomness, no I/O. Single-threaded. Costs per step are
// O(running requests); memory O(live requests + cached blocks).
#pragma once

#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "engine/engine_model.h"
#include "engine/perf_profiles.h"

namespace switchyard::engine {

class BatchingModel final : public EngineModel {
 public:
  // Throws std::invalid_argument on a config with non-positive figures (start-up only).
  explicit BatchingModel(PerfConfig config);

  void submit(const ModelRequest& request, TimeNs now) override;
  void cancel(RequestId id, TimeNs now) override;
  void advance(TimeNs now, std::vector<TokenEvent>& events) override;
  TimeNs nextEventTime() const override { return in_step_ ? step_end_ : -1; }
  EngineLoad load() const override;
  void setSlowdown(double factor) override;
  TimeNs prefillOnlyNs(int tokens) const override;

  const PerfConfig& config() const { return config_; }
  // The roofline step time for `batched_tokens` new tokens attending to `context_tokens`,
  // including overhead and the current slowdown.
  TimeNs stepDurationNs(int64_t batched_tokens, int64_t context_tokens) const;

 private:
  struct Seq {
    RequestId id = 0;
    int prompt_tokens = 0;
    int max_tokens = 1;
    int produced = 0;
    int num_computed = 0;  // tokens whose KV is in the cache
    int scheduled = 0;     // new tokens in the step in flight
    std::vector<uint64_t> block_hashes;
    std::vector<uint64_t> shared;  // cache entries held: always the first blocks of the prompt
    int private_blocks = 0;
    TimeNs arrival = 0;
    TimeNs first_scheduled = -1;
    TimeNs last_token = -1;
    bool done = false;

    int numTokens() const { return prompt_tokens + produced; }
    int64_t blocksHeld() const { return static_cast<int64_t>(shared.size()) + private_blocks; }
  };
  struct CacheEntry {
    int refs = 0;
    uint64_t tick = 0;  // key in lru_ while refs == 0
  };

  void startStep(TimeNs at);
  void finishStep(std::vector<TokenEvent>& events);
  bool allocate(Seq& seq, int new_tokens);
  bool takeBlocks(int64_t count);
  void release(Seq& seq);
  void acquireEntry(uint64_t hash, CacheEntry& entry);
  void acquirePrefix(Seq& seq);
  void shareFullBlocks(Seq& seq);

  PerfConfig config_;
  double slowdown_ = 1;
  std::unordered_map<RequestId, Seq> seqs_;  // element addresses are stable
  std::deque<Seq*> waiting_;
  std::vector<Seq*> running_;  // admission order
  std::vector<Seq*> step_;     // scheduled in the step in flight; nullptr once cancelled
  bool in_step_ = false;
  TimeNs step_start_ = 0;
  TimeNs step_end_ = 0;

  int64_t free_blocks_ = 0;
  int64_t evictable_blocks_ = 0;
  std::unordered_map<uint64_t, CacheEntry> cache_;
  std::map<uint64_t, uint64_t> lru_;  // tick -> hash of entries nobody holds
  uint64_t tick_ = 0;

  int64_t preemptions_ = 0;
  double busy_seconds_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
  int64_t aborted_ = 0;
  double aborted_running_seconds_ = 0;
  int64_t aborted_tokens_ = 0;
};

}  // namespace switchyard::engine
