// BatchingModel: an EngineModel that behaves like a continuous-batching engine (vLLM's scheduler,
// simplified) with step durations from a roofline of the GPU's spec-sheet figures.
//
// A submitted request becomes schedulable `request_overhead` later (API server, tokenisation,
// input processing). Scheduling, once per step (a step starts when the previous one ends, or when
// a request becomes schedulable while idle), with chunked prefill (vLLM V1, the default):
//  - running requests first, in admission order: a decoding request needs one token, a request
//    still in (chunked) prefill needs min(remaining prompt, token budget); the token budget per
//    step is max_num_batched_tokens. A request whose new tokens need KV blocks that are not free
//    preempts the newest running request (recompute: its blocks are freed and it goes back to the
//    front of the waiting queue), repeatedly, possibly itself;
//  - then, if nothing was preempted, waiting requests in FIFO order while the batch has fewer
//    than max_num_seqs requests, budget is left and their blocks can be allocated. With prefix
//    caching, the leading prompt blocks already cached are reused and not prefilled again.
// Without chunked prefill (vLLM V0's default scheduler) waiting requests are prefilled whole, in
// prefill-only steps that run before any decode (the running requests wait); decodes run in the
// steps with nothing to prefill. With num_scheduler_steps N > 1 (vLLM's multi-step scheduling) a
// step with nothing to prefill runs N decode steps back to back: the batch is fixed for the N
// steps and every request's tokens of the N steps are delivered together at the end (a request
// that reaches its last token early still occupies its slot until then).
// KV cache: fixed-size blocks (PerfConfig::block_size tokens); a request holds
// ceil(computed tokens / block size) blocks. Full prompt blocks become shared cache entries;
// unreferenced entries stay cached (counted as free) until evicted least-recently-used first.
//
// Step duration (the roofline), for T tokens of S requests in the batch attending to C context
// tokens:
//   compute = 2 * params * T / (peak FLOPs * compute efficiency)
//   memory  = (weight bytes + C * KV bytes per token) / (bandwidth * bandwidth efficiency)
//   step    = (max(compute, memory) + per-step overhead + S * per-sequence overhead) * slowdown
// At the end of a step every request whose known tokens are all computed samples one token.
//
// What advance() reports is either every token (the HTTP emulator streams them) or, with
// Detail::kMilestones (the fleet simulator), only each request's first token and its last one. In
// that mode a plain decode step (chunked prefill, one step per decision, every running request
// decoding, nothing waiting or becoming schedulable, enough free KV blocks) costs O(1): the running
// requests are kept "lazy" (their progress is the count of plain steps since they became lazy,
// KV blocks are taken in one sum per step from a table of which requests cross a block boundary
// at which step), and are brought up to date only when a step needs them. The events and load are
// exactly those of the step-by-step path (a unit test compares the two).
//
// Pure and deterministic: no clock, no randomness, no I/O. Single-threaded. Costs per step are
// O(running requests), O(1) for plain steps with milestones; memory O(live requests + cached
// blocks).
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
  TimeNs nextEventTime() const override;
  EngineLoad load() const override;
  void setSlowdown(double factor) override;
  TimeNs prefillOnlyNs(int tokens) const override;

  // Detail of advance()'s events (header comment). kMilestones with `lazy` false runs every step
  // request by request (for tests comparing the two).
  enum class Detail : uint8_t { kEveryToken, kMilestones };
  void setDetail(Detail detail, bool lazy = true);

  const PerfConfig& config() const { return config_; }
  // The roofline step time for `batched_tokens` new tokens of `sequences` requests attending to
  // `context_tokens`, including overheads and the current slowdown.
  TimeNs stepDurationNs(int64_t batched_tokens, int64_t context_tokens,
                        int64_t sequences = 1) const;

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
    int reported = 0;  // output tokens already reported in events (milestones)
    TimeNs arrival = 0;
    TimeNs ready = 0;  // schedulable from (arrival + request overhead)
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
  // The two schedulers (header comment); each fills step_ and the step's totals.
  struct StepPlan {
    int64_t batched = 0;
    int64_t context = 0;
    bool prefill = false;  // some scheduled request is (re)computing its prompt
  };
  void scheduleChunked(TimeNs at, StepPlan& plan);
  void scheduleSeparate(TimeNs at, StepPlan& plan);
  bool scheduleRunningDecodes(TimeNs at, StepPlan& plan, int& budget);
  bool admitWaiting(TimeNs at, StepPlan& plan, int& budget, bool whole);
  void schedule(Seq* seq, int tokens, TimeNs at, StepPlan& plan, int& budget);
  // Multi-step: extends a decode-only step to up to N steps; returns the added duration.
  TimeNs extendDecodes(const StepPlan& plan);
  void finishStep(std::vector<TokenEvent>& events);
  void emit(Seq& seq, bool finished, TimeNs previous_token, std::vector<TokenEvent>& events);
  // Plain decode steps (milestones): header comment.
  bool lazify();
  void materialize();
  bool startPlainStep(TimeNs at);
  void finishPlainStep(std::vector<TokenEvent>& events);
  int blockDue(const Seq& seq) const;  // the residue of plain_steps_ at which it needs a block
  bool allocate(Seq& seq, int new_tokens);
  bool takeBlocks(int64_t count);
  void release(Seq& seq);
  void acquireEntry(uint64_t hash, CacheEntry& entry);
  void acquirePrefix(Seq& seq);
  void shareFullBlocks(Seq& seq);

  PerfConfig config_;
  double slowdown_ = 1;
  std::unordered_map<RequestId, Seq> seqs_;  // element addresses are stable
  std::deque<Seq*> pending_;  // submitted, not schedulable yet (request overhead); FIFO
  std::deque<Seq*> waiting_;
  std::vector<Seq*> running_;  // admission order
  std::vector<Seq*> step_;     // scheduled in the step in flight; nullptr once cancelled
  bool in_step_ = false;
  TimeNs step_start_ = 0;
  TimeNs step_end_ = 0;
  int step_decode_steps_ = 1;  // decode steps in the step in flight (multi-step)

  int64_t free_blocks_ = 0;
  int64_t evictable_blocks_ = 0;
  std::unordered_map<uint64_t, CacheEntry> cache_;
  std::map<uint64_t, uint64_t> lru_;  // tick -> hash of entries nobody holds
  uint64_t tick_ = 0;

  int64_t preemptions_ = 0;
  double busy_seconds_ = 0;
  int64_t generated_ = 0;

  Detail detail_ = Detail::kEveryToken;
  bool lazy_enabled_ = false;
  bool lazy_ = false;          // the running requests' progress is plain_steps_ - lazy_base_
  bool step_plain_ = false;    // the step in flight is a plain decode step
  int64_t plain_steps_ = 0;    // plain decode steps run so far
  int64_t lazy_base_ = 0;      // plain_steps_ when the running requests became lazy
  int64_t lazy_finish_ = 0;    // plain_steps_ at which the first of them may finish
  int64_t lazy_context_ = 0;   // their num_computed, summed, at lazy_base_
  TimeNs lazy_last_end_ = -1;  // the end of the last plain step
  std::vector<int32_t> block_due_;  // per residue of plain_steps_ mod block size
  std::vector<RequestId> done_;     // scratch
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
};

}  // namespace switchyard::engine
