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
// that mode (chunked prefill, one step per decision) the requests that are decoding form a lazy
// group: each one's progress is the number of group steps since it joined, the group's KV blocks
// are taken in one sum per step (a table says how many members cross a block boundary at which
// step), and a heap says when the next member finishes. A step then costs O(1) for the group plus
// O(log n) per request that joins (its first token) or leaves (its last), and the group falls back
// to request-by-request scheduling only when order would matter: a KV shortage (preemption) or
// prefills that do not all fit the token budget. The events and load are exactly those of the
// step-by-step path (a unit test compares the two).
//
// Pure and deterministic: no clock, no randomness, no I/O. Single-threaded. Costs per step are
// O(running requests), with milestones O(requests not decoding) plus O(log n) per request joining
// or leaving the group; memory O(live requests + cached blocks).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine_model.h"
#include "engine/finish_queue.h"
#include "fleet/kv_index/kv_event_decoder.h"
#include "engine/perf_profiles.h"

namespace switchyard::engine {

class alignas(64) BatchingModel final : public EngineModel {
 public:
  // Throws std::invalid_argument on a config with non-positive figures (start-up only). Request
  // ids must be unique among the requests in the model (every driver numbers its own).
  explicit BatchingModel(PerfConfig config);
  ~BatchingModel() override;
  BatchingModel(const BatchingModel&) = delete;
  BatchingModel& operator=(const BatchingModel&) = delete;

  // Where the models of one thread keep their requests' state (Seq below). Every Seq lives in a
  // pool (addresses stable) and is reused once its request is done, so a request costs no
  // allocation or lookup once warm and a finish-heap entry can point at its Seq. A pool shared
  // by many models (a fleet simulation's) hands out the Seq freed last by any of them, still in
  // cache, where a model's own would hand out the one it freed last, long evicted. Not
  // thread-safe: the models sharing a pool run in one thread.
  class SeqPool;
  static std::shared_ptr<SeqPool> makeSeqPool();
  // Takes its requests' state from `pool` from now on; only while the model holds no request.
  void shareSeqPool(std::shared_ptr<SeqPool> pool);

  void submit(const ModelRequest& request, TimeNs now) override;
  void cancel(RequestId id, TimeNs now) override;
  void advance(TimeNs now, std::vector<TokenEvent>& events) override;
  TimeNs nextEventTime() const override;
  EngineLoad load() const override;
  void setSlowdown(double factor) override;
  TimeNs prefillOnlyNs(int tokens) const override;
  // Cached blocks stored (a request's full prompt blocks newly shared) and evicted (LRU under KV
  // pressure), in order; consecutive events of one kind are merged. Off unless enabled.
  void enableKvEvents() override { kv_events_ = true; }
  void takeKvEvents(std::vector<fleet::kv_index::KvEvent>& out) override;

  // Detail of advance()'s events (header comment). kMilestones with `lazy` false runs every step
  // request by request (for tests comparing the two).
  enum class Detail : uint8_t { kEveryToken, kMilestones };
  void setDetail(Detail detail, bool lazy = true);

  // Called by advance() as it produces each event, before the rest of the step is priced. A
  // driver that reads its own record of the request when it handles the event can prefetch
  // that record here, so the read overlaps the step's remaining work: in a fleet simulation
  // the records are long out of cache by then. Off (nullptr) by default.
  using EventHint = void (*)(void* context, RequestId id);
  void setEventHint(EventHint hint, void* context) {
    event_hint_ = hint;
    event_hint_context_ = context;
  }

  const PerfConfig& config() const { return config_; }
  // exportedGauges(load()), reading only what those gauges need: a scrape of a cold model
  // touches two cache lines (the fleet simulator scrapes every model of every gateway 10 times a
  // simulated second).
  ExportedGauges gauges() const;
  // Starts loading what a scrape reads (nextEventTime(), a no-op advance(), gauges()): for a
  // driver that scrapes many cold models in a row.
  void prefetchForScrape() const {
    __builtin_prefetch(&next_event_);
    __builtin_prefetch(&running_);
  }
  // For a driver that knows which cold model it advances next (the fleet simulator, one event
  // ahead): prefetchForAdvance() starts loading the model's own lines that advance() reads;
  // prefetchStep(), called once those are in, what advance() reads through them (the step's
  // requests, the finish queue's top, children and last entry, the member finishing next).
  void prefetchForAdvance() const;
  void prefetchStep() const { prefetchFinishing(); }
  // The roofline step time for `batched_tokens` new tokens of `sequences` requests attending to
  // `context_tokens`, including overheads and the current slowdown.
  TimeNs stepDurationNs(int64_t batched_tokens, int64_t context_tokens,
                        int64_t sequences = 1) const;

 private:
  // Two aligned cache lines, what a step reads of a request in the first and its timings in the
  // second: a request's steps are far apart and each finds it evicted.
  struct alignas(64) Seq {
    RequestId id = 0;
    int prompt_tokens = 0;
    int max_tokens = 1;
    int produced = 0;
    int num_computed = 0;  // tokens whose KV is in the cache
    int scheduled = 0;     // new tokens in the step in flight
    int private_blocks = 0;
    int shared_blocks = 0;  // cache entries held: always the prompt's first blocks
    int reported = 0;       // output tokens already reported in events (milestones)
    uint32_t group_of = 0;  // the pool id of the model whose decoding group it is in (lazy)
    uint64_t order = 0;     // admission sequence number: running_ is in this order
    int64_t lazy_base = 0;  // group_steps_ when it joined
    bool lazy = false;      // in the decoding group: num_computed and produced are as of joining
    bool done = false;
    TimeNs arrival = 0;
    TimeNs ready = 0;  // schedulable from (arrival + request overhead)
    TimeNs first_scheduled = -1;
    TimeNs last_token = -1;
    std::vector<uint64_t> block_hashes;

    int numTokens() const { return prompt_tokens + produced; }
    int64_t blocksHeld() const { return shared_blocks + private_blocks; }
  };
  static_assert(sizeof(Seq) == 128, "a request's state is two cache lines");

  // A FIFO of requests in one vector and a head index: 32 bytes beside the other step state,
  // where a std::deque is an 80-byte header and a chunk map elsewhere (more cache lines to touch
  // in a cold model). pop_front() moves the head; the vector is compacted once the head has
  // passed its middle, so each request is moved O(1) times on average.
  class SeqQueue {
   public:
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    Seq* front() const { return items_[head_]; }
    auto begin() const { return items_.begin() + static_cast<ptrdiff_t>(head_); }
    auto end() const { return items_.end(); }
    void push_back(Seq* seq) { items_.push_back(seq); }
    void push_front(Seq* seq) {
      if (head_ > 0) {
        items_[--head_] = seq;
      } else {
        items_.insert(items_.begin(), seq);
      }
    }
    void pop_front() {
      ++head_;
      if (head_ == items_.size()) {
        clear();
      } else if (head_ >= kCompactAfter && 2 * head_ >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + static_cast<ptrdiff_t>(head_));
        head_ = 0;
      }
    }
    void remove(const Seq* seq) {
      items_.erase(std::remove(items_.begin() + static_cast<ptrdiff_t>(head_), items_.end(), seq),
                   items_.end());
      if (empty()) clear();
    }

   private:
    static constexpr size_t kCompactAfter = 16;
    void clear() {
      items_.clear();
      head_ = 0;
    }
    std::vector<Seq*> items_;
    size_t head_ = 0;
  };

  struct CacheEntry {
    int refs = 0;
    uint64_t tick = 0;  // key in lru_ while refs == 0
  };

  TimeNs findNextEvent() const;  // nextEventTime() computed (it caches the answer)
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
  // Group-only steps due by `now` with nothing else happening, run in one loop (the .cc says
  // when exactly); leaves the step in flight to the step-by-step path otherwise.
  void runGroupSteps(TimeNs now);
  void emit(Seq& seq, bool finished, TimeNs previous_token, std::vector<TokenEvent>& events);
  // The decoding group (milestones): header comment.
  bool groupEnabled() const;
  void join(Seq& seq);
  void leave(Seq& seq, bool step_in_flight);
  void leaveAll();
  bool planWithGroup(TimeNs at, StepPlan& plan);
  void finishMember(Seq& seq, std::vector<TokenEvent>& events);
  void prefetchFinishing() const;
  // Whether a finish-heap entry is a member of this group with its last token at `at`: two
  // entries that say so agree, and any other entry is stale.
  bool isLive(const Seq& seq, int64_t at) const {
    return seq.lazy && seq.group_of == id_in_pool_ &&
           seq.lazy_base + seq.max_tokens - seq.produced == at;
  }
  size_t dueSlot(const Seq& seq) const;  // the residue of the group step it needs a block at
  // Members needing a block at group steps of this residue (mod block size).
  int32_t& dueAt(int64_t residue) {
    const auto r = static_cast<size_t>(residue);
    return r < due_inline_.size() ? due_inline_[r] : block_due_[r];
  }
  int32_t dueAt(int64_t residue) const {
    const auto r = static_cast<size_t>(residue);
    return r < due_inline_.size() ? due_inline_[r] : block_due_[r];
  }
  Seq& newSeq();          // from seqs_
  Seq* findLive(RequestId id) const;
  void forget(Seq& seq);  // done or cancelled: its Seq goes back to seqs_
  bool allocate(Seq& seq, int new_tokens);
  bool takeBlocks(int64_t count);
  void release(Seq& seq);
  void acquireEntry(uint64_t hash, CacheEntry& entry);
  void acquirePrefix(Seq& seq);
  void shareFullBlocks(Seq& seq);


 public:
  class SeqPool {
   public:
    Seq& take();
    void give(Seq& seq) { free_.push_back(&seq); }
    // Unique among the models sharing the pool: a stale finish-heap entry of one model never
    // matches a Seq reused by another's group.
    uint32_t newModelId() { return ++models_; }

   private:
    std::vector<Seq*> free_;
    std::deque<Seq> seqs_;
    uint32_t models_ = 0;
  };

 private:
  // Member order is a layout: in a fleet simulation every model is cold when its turn comes, and
  // a telemetry read (nextEventTime(), advance() with nothing due, gauges()) or a step should
  // touch as few cache lines as it can. The object is line-aligned; line 0 (after the vtable
  // pointer) has what a telemetry read needs, lines 1 and 2 what a step of the decoding group
  // needs (its state, the roofline, copies of the scheduler's limits), line 3 the queues'
  // sizes, then the rest of a step's state, then what only load() reads, the KV cache's maps,
  // the configuration's names and KV events.
  bool in_step_ = false;
  bool group_in_step_ = false;  // the step in flight decodes the group
  bool lazy_enabled_ = false;
  bool kv_events_ = false;
  Detail detail_ = Detail::kEveryToken;
  bool chunked_prefill_ = true;  // config_'s
  bool prefix_caching_ = false;  // config_'s
  bool multi_step_ = false;      // config_'s num_scheduler_steps > 1
  int step_decode_steps_ = 1;    // decode steps in the step in flight (multi-step)
  int max_num_seqs_ = 1;         // config_'s
  TimeNs step_end_ = 0;
  mutable TimeNs lookahead_at_ = -1;  // nextEventTime() over group-only steps; -1: not known
  // nextEventTime()'s answer until the model changes (kNotKnown): a telemetry read of a model
  // with nothing due then touches this line only.
  static constexpr TimeNs kNotKnown = std::numeric_limits<TimeNs>::min();
  mutable TimeNs next_event_ = kNotKnown;
  int64_t free_blocks_ = 0;
  int64_t evictable_blocks_ = 0;
  // Line 1: the decoding group and the step in flight.
  int64_t group_steps_ = 0;  // steps the group has decoded
  int64_t group_size_ = 0;
  int64_t group_sum_ = 0;  // Σ (num_computed − lazy_base) over the members
  int64_t next_finish_at_ = std::numeric_limits<int64_t>::max();  // the heap's top
  TimeNs step_start_ = 0;
  TimeNs group_last_end_ = -1;  // the end of the group's last step
  double busy_seconds_ = 0;
  int64_t generated_ = 0;
  // Line 2: the roofline's coefficients and the scheduler's figures (from config_).
  double compute_ns_per_token_ = 0;
  double memory_ns_base_ = 0;
  double memory_ns_per_context_token_ = 0;
  TimeNs step_overhead_ns_ = 0;
  TimeNs seq_overhead_ns_ = 0;
  double slowdown_ = 1;
  TimeNs request_overhead_ns_ = 0;
  int block_size_ = 1;
  int max_num_batched_tokens_ = 1;
  // Line 3: with line 0, what gauges() reads. A live Seq is in exactly one of pending_,
  // waiting_ and running_ (cancel() finds it there).
  std::vector<Seq*> running_;  // admission order
  SeqQueue waiting_;
  int64_t kv_blocks_ = 0;
  // Then the rest of a step's state.
  std::vector<Seq*> step_;   // scheduled in the step in flight; nullptr once cancelled
  std::vector<Seq*> eager_;  // running requests outside the group, in admission order
  uint64_t next_order_ = 0;
  SeqQueue pending_;  // submitted, not schedulable yet (request overhead); FIFO
  // Each member's group_steps_ at its last token. An entry is stale when its Seq left the group
  // (cancelled, or reused since): isLive() tells, and stale entries are skipped.
  FinishQueue<Seq> finish_heap_;
  int64_t preemptions_ = 0;
  std::vector<Seq*> finishing_;  // scratch: members finishing this step
  std::vector<Seq*> done_ptrs_;  // scratch: requests finished this step
  EventHint event_hint_ = nullptr;
  void* event_hint_context_ = nullptr;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
  std::array<int32_t, 32> due_inline_{};  // block_due_ for block sizes up to 32
  std::vector<int32_t> block_due_;        // the same for larger block sizes
  int64_t aborted_ = 0;
  double aborted_running_seconds_ = 0;
  int64_t aborted_tokens_ = 0;
  std::shared_ptr<SeqPool> seqs_;  // this model's own unless shareSeqPool() was called
  uint32_t id_in_pool_ = 0;        // SeqPool::newModelId()

  PerfConfig config_;
  std::unordered_map<uint64_t, CacheEntry> cache_;
  std::map<uint64_t, uint64_t> lru_;  // tick -> hash of entries nobody holds
  uint64_t tick_ = 0;
  std::vector<fleet::kv_index::KvEvent> kv_pending_;
  void recordStored(const Seq& seq, size_t block);
  void recordRemoved(uint64_t hash);
};

}  // namespace switchyard::engine
