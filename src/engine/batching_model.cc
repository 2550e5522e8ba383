#include "engine/batching_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace switchyard::engine {

BatchingModel::BatchingModel(PerfConfig config)
    : seqs_(makeSeqPool()), id_in_pool_(seqs_->newModelId()), config_(std::move(config)) {
  if (!(config_.params > 0) || !(config_.peak_flops > 0) || !(config_.bandwidth_bytes_per_s > 0) ||
      !(config_.kv_bytes_per_token > 0) || config_.kv_blocks < 1 || config_.block_size < 1 ||
      config_.max_num_seqs < 1 || config_.max_num_batched_tokens < 1 ||
      !(config_.compute_efficiency > 0) || !(config_.bandwidth_efficiency > 0) ||
      config_.step_overhead_ns < 0 || config_.seq_overhead_ns < 0 ||
      config_.request_overhead_ns < 0 || config_.num_scheduler_steps < 1) {
    throw std::invalid_argument(
        fmt::format("invalid performance config for {} on {}", config_.model, config_.gpu));
  }
  free_blocks_ = config_.kv_blocks;
  kv_blocks_ = config_.kv_blocks;
  block_size_ = config_.block_size;
  chunked_prefill_ = config_.chunked_prefill;
  prefix_caching_ = config_.prefix_caching;
  max_num_seqs_ = config_.max_num_seqs;
  max_num_batched_tokens_ = config_.max_num_batched_tokens;
  multi_step_ = config_.num_scheduler_steps > 1;
  request_overhead_ns_ = config_.request_overhead_ns;
  step_overhead_ns_ = config_.step_overhead_ns;
  seq_overhead_ns_ = config_.seq_overhead_ns;
  compute_ns_per_token_ =
      2.0 * config_.params / (config_.peak_flops * config_.compute_efficiency) * 1e9;
  const double bandwidth = config_.bandwidth_bytes_per_s * config_.bandwidth_efficiency;
  memory_ns_base_ = config_.weight_bytes / bandwidth * 1e9;
  memory_ns_per_context_token_ = config_.kv_bytes_per_token / bandwidth * 1e9;
}

TimeNs BatchingModel::stepDurationNs(int64_t batched_tokens, int64_t context_tokens,
                                     int64_t sequences) const {
  // The roofline, with its coefficients resolved at construction (header comment).
  const double compute_ns = compute_ns_per_token_ * static_cast<double>(batched_tokens);
  const double memory_ns =
      memory_ns_base_ + memory_ns_per_context_token_ * static_cast<double>(context_tokens);
  const double step_ns = std::max(compute_ns, memory_ns) + static_cast<double>(step_overhead_ns_) +
                         static_cast<double>(sequences * seq_overhead_ns_);
  // Rounded half up, as llround does for a positive value (the sum is exact below 2^52 ns), without
  // its library call: the simulator prices millions of steps.
  const double scaled = step_ns * slowdown_;
  return scaled < 1 ? 1 : static_cast<TimeNs>(scaled + 0.5);
}

TimeNs BatchingModel::prefillOnlyNs(int tokens) const {
  return stepDurationNs(std::max(tokens, 1), std::max(tokens, 1));
}

void BatchingModel::setSlowdown(double factor) {
  // Applies from the next step on; the step in flight was already launched.
  slowdown_ = factor > 0 && std::isfinite(factor) ? factor : 1;
  lookahead_at_ = -1;
  next_event_ = kNotKnown;
}

BatchingModel::Seq& BatchingModel::SeqPool::take() {
  if (free_.empty()) return seqs_.emplace_back();
  Seq& seq = *free_.back();
  free_.pop_back();
  // A fresh Seq that keeps its vectors' capacity.
  std::vector<uint64_t> hashes = std::move(seq.block_hashes);
  hashes.clear();
  seq = Seq{};
  seq.block_hashes = std::move(hashes);
  return seq;
}

std::shared_ptr<BatchingModel::SeqPool> BatchingModel::makeSeqPool() {
  return std::make_shared<SeqPool>();
}

void BatchingModel::shareSeqPool(std::shared_ptr<SeqPool> pool) {
  if (!running_.empty() || !waiting_.empty() || !pending_.empty()) {
    throw std::logic_error("BatchingModel::shareSeqPool with requests in the model");
  }
  if (pool) seqs_ = std::move(pool);
  id_in_pool_ = seqs_->newModelId();
}

BatchingModel::~BatchingModel() {
  // A shared pool outlives the model: what its requests held goes back.
  for (Seq* seq : pending_) seqs_->give(*seq);
  for (Seq* seq : waiting_) seqs_->give(*seq);
  for (Seq* seq : running_) seqs_->give(*seq);
}

BatchingModel::Seq& BatchingModel::newSeq() { return seqs_->take(); }

BatchingModel::Seq* BatchingModel::findLive(RequestId id) const {
  const auto has_id = [id](const Seq* seq) { return seq->id == id; };
  if (auto it = std::find_if(running_.begin(), running_.end(), has_id); it != running_.end()) {
    return *it;
  }
  if (auto it = std::find_if(waiting_.begin(), waiting_.end(), has_id); it != waiting_.end()) {
    return *it;
  }
  const auto it = std::find_if(pending_.begin(), pending_.end(), has_id);
  return it != pending_.end() ? *it : nullptr;
}

void BatchingModel::forget(Seq& seq) {
  seq.lazy = false;  // its finish-heap entries, if any, are stale
  seqs_->give(seq);
}

void BatchingModel::submit(const ModelRequest& request, TimeNs now) {
  Seq& seq = newSeq();
  seq.id = request.id;
  // Defensive clamp of the documented precondition: a request that could never fit would wait
  // forever.
  const int capacity = static_cast<int>(std::min<int64_t>(config_.kvCapacityTokens(), 1 << 30));
  seq.prompt_tokens = std::clamp(request.prompt_tokens, 1, std::max(1, capacity - 1));
  seq.max_tokens = std::clamp(request.max_tokens, 1, std::max(1, capacity - seq.prompt_tokens));
  if (prefix_caching_) seq.block_hashes = request.block_hashes;
  seq.arrival = now;
  seq.ready = now + request_overhead_ns_;
  lookahead_at_ = -1;
  next_event_ = kNotKnown;
  if (request_overhead_ns_ > 0) {
    pending_.push_back(&seq);  // startStep() moves it on once it is ready
    return;
  }
  waiting_.push_back(&seq);
  if (!in_step_) startStep(now);
}

TimeNs BatchingModel::nextEventTime() const {
  if (next_event_ == kNotKnown) next_event_ = findNextEvent();
  return next_event_;
}

TimeNs BatchingModel::findNextEvent() const {
  if (!in_step_) return pending_.empty() ? -1 : pending_.front()->ready;
  // With milestones, a run of group-only steps (nothing else running, waiting or about to be)
  // reports nothing until a member finishes or a KV shortage changes the schedule: the end of
  // that step, found by pricing the steps ahead exactly as startStep() would.
  if (!group_in_step_ || !step_.empty() || !waiting_.empty() || !pending_.empty()) {
    return step_end_;
  }
  if (lookahead_at_ >= 0) return lookahead_at_;
  const int64_t bs = block_size_;
  const int64_t top = next_finish_at_;
  int64_t free = free_blocks_ + evictable_blocks_;
  TimeNs end = step_end_;
  constexpr int64_t kHorizon = 4096;  // steps priced at most per call
  for (int64_t step = group_steps_ + 1; step < top && step - group_steps_ < kHorizon; ++step) {
    const int32_t due = dueAt(step % bs);
    if (due > free) break;  // a preemption: the step-by-step path decides that step
    free -= due;
    end += stepDurationNs(group_size_, group_sum_ + group_size_ * (step + 1), group_size_);
  }
  lookahead_at_ = end;
  return end;
}

void BatchingModel::cancel(RequestId id, TimeNs now) {
  Seq* seq = findLive(id);
  if (seq == nullptr) return;
  lookahead_at_ = -1;
  next_event_ = kNotKnown;
  // A member of the decoding group is brought up to date first (the others stay in the group),
  // so the tokens computed for it count.
  if (seq->lazy) leave(*seq, group_in_step_);
  eager_.erase(std::remove(eager_.begin(), eager_.end(), seq), eager_.end());
  ++aborted_;
  aborted_tokens_ += seq->num_computed;
  if (seq->first_scheduled >= 0 && now > seq->first_scheduled) {
    aborted_running_seconds_ += static_cast<double>(now - seq->first_scheduled) / 1e9;
  }
  std::replace(step_.begin(), step_.end(), seq, static_cast<Seq*>(nullptr));
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.remove(seq);
  pending_.remove(seq);
  release(*seq);
  forget(*seq);
}

void BatchingModel::advance(TimeNs now, std::vector<TokenEvent>& events) {
  // Nothing due (a priced look-ahead is never earlier than the step in flight's end): nothing
  // changes, not even the next event's time.
  if (in_step_ && step_end_ > now) return;
  prefetchFinishing();
  next_event_ = kNotKnown;
  if (lookahead_at_ >= 0 && lookahead_at_ <= now) lookahead_at_ = -1;  // reached: price anew
  for (;;) {
    if (in_step_) {
      runGroupSteps(now);
      if (step_end_ > now) return;
      const TimeNs end = step_end_;
      finishStep(events);
      startStep(end);
    } else if (!pending_.empty() && pending_.front()->ready <= now) {
      startStep(pending_.front()->ready);  // idle until a request became schedulable
    } else {
      return;
    }
  }
}

void BatchingModel::prefetchFinishing() const {
  // What finishStep() reads first: the step's requests and the member that finishes next.
  constexpr size_t kMost = 16;
  for (size_t i = 0; i < std::min(step_.size(), kMost); ++i) __builtin_prefetch(step_[i]);
  if (!finish_heap_.empty()) {
    // Both of its lines: the liveness check and its finish read the second too.
    const auto* member = reinterpret_cast<const char*>(finish_heap_.top().item);
    __builtin_prefetch(member);
    __builtin_prefetch(member + 64);
  }
  finish_heap_.prefetchPop();
}

void BatchingModel::prefetchForAdvance() const {
  // The members from in_step_ to the event hint: the step's state, the group's counters, the
  // queues' headers (a few lines; the rest of the model is configuration and statistics).
  const auto* from = reinterpret_cast<const char*>(&in_step_);
  const auto* to = reinterpret_cast<const char*>(&event_hint_context_);
  for (const char* line = from; line <= to; line += 64) __builtin_prefetch(line);
}

void BatchingModel::runGroupSteps(TimeNs now) {
  // While the step in flight and the next one are the group's alone and nothing happens between
  // them (no member finishes, nothing else is running, waiting or becoming schedulable, the
  // next step's blocks are free), finishStep() then startStep() would only move the group's
  // counters on: this is that, without their passes over the step's requests.
  const int64_t bs = block_size_;
  while (step_end_ <= now && group_in_step_ && group_size_ > 0 && step_.empty() &&
         eager_.empty() && waiting_.empty() && next_finish_at_ > group_steps_ + 1 &&
         group_size_ <= max_num_batched_tokens_ &&
         (pending_.empty() || pending_.front()->ready > step_end_)) {
    const int32_t due = dueAt((group_steps_ + 1) % bs);
    if (due > free_blocks_ + evictable_blocks_) return;  // a preemption: request by request
    busy_seconds_ += static_cast<double>(step_end_ - step_start_) / 1e9;
    ++group_steps_;
    generated_ += group_size_;
    group_last_end_ = step_end_;
    takeBlocks(due);
    step_start_ = step_end_;
    step_end_ += stepDurationNs(group_size_, group_sum_ + group_size_ * (group_steps_ + 1),
                                group_size_);
  }
}

bool BatchingModel::takeBlocks(int64_t count) {
  if (free_blocks_ + evictable_blocks_ < count) return false;
  while (free_blocks_ < count) {
    auto oldest = lru_.begin();
    if (kv_events_) recordRemoved(oldest->second);
    cache_.erase(oldest->second);
    lru_.erase(oldest);
    --evictable_blocks_;
    ++free_blocks_;
  }
  free_blocks_ -= count;
  return true;
}

bool BatchingModel::allocate(Seq& seq, int new_tokens) {
  const int64_t needed =
      (static_cast<int64_t>(seq.num_computed) + new_tokens + block_size_ - 1) /
          block_size_ -
      seq.blocksHeld();
  if (needed <= 0) return true;
  if (!takeBlocks(needed)) return false;
  seq.private_blocks += static_cast<int>(needed);
  return true;
}

void BatchingModel::release(Seq& seq) {
  // Last blocks first, so that the tail of a prompt is evicted before its shared head.
  for (int i = seq.shared_blocks - 1; i >= 0; --i) {
    const uint64_t hash = seq.block_hashes[static_cast<size_t>(i)];
    auto entry = cache_.find(hash);
    if (entry == cache_.end()) continue;
    if (--entry->second.refs == 0) {
      entry->second.tick = ++tick_;
      lru_.emplace(entry->second.tick, hash);
      ++evictable_blocks_;
    }
  }
  seq.shared_blocks = 0;
  free_blocks_ += seq.private_blocks;
  seq.private_blocks = 0;
  seq.num_computed = 0;
}

void BatchingModel::recordStored(const Seq& seq, size_t block) {
  using fleet::kv_index::KvEvent;
  using fleet::kv_index::KvEventType;
  const uint64_t hash = seq.block_hashes[block];
  // Continues the previous event when it stored this chain's previous block.
  if (block > 0 && !kv_pending_.empty() && kv_pending_.back().type == KvEventType::kBlockStored &&
      kv_pending_.back().block_hashes.back() == seq.block_hashes[block - 1]) {
    kv_pending_.back().block_hashes.push_back(hash);
    return;
  }
  KvEvent& event = kv_pending_.emplace_back();
  event.type = KvEventType::kBlockStored;
  event.block_hashes.push_back(hash);
  if (block > 0) event.parent_block_hash = seq.block_hashes[block - 1];
  event.block_size = static_cast<uint32_t>(block_size_);
  event.medium = "GPU";
}

void BatchingModel::recordRemoved(uint64_t hash) {
  using fleet::kv_index::KvEventType;
  if (kv_pending_.empty() || kv_pending_.back().type != KvEventType::kBlockRemoved) {
    fleet::kv_index::KvEvent& event = kv_pending_.emplace_back();
    event.type = KvEventType::kBlockRemoved;
    event.medium = "GPU";
  }
  kv_pending_.back().block_hashes.push_back(hash);
}

void BatchingModel::takeKvEvents(std::vector<fleet::kv_index::KvEvent>& out) {
  for (auto& event : kv_pending_) out.push_back(std::move(event));
  kv_pending_.clear();
}

void BatchingModel::acquireEntry(uint64_t hash, CacheEntry& entry) {
  (void)hash;
  if (entry.refs++ == 0) {
    lru_.erase(entry.tick);
    --evictable_blocks_;
  }
}

void BatchingModel::acquirePrefix(Seq& seq) {
  // At least one token is always computed: the last prompt token's logits give the first output.
  const size_t limit = std::min(seq.block_hashes.size(),
                                static_cast<size_t>((seq.numTokens() - 1) / block_size_));
  for (size_t i = 0; i < limit; ++i) {
    auto entry = cache_.find(seq.block_hashes[i]);
    if (entry == cache_.end()) break;
    acquireEntry(entry->first, entry->second);
    ++seq.shared_blocks;
  }
  seq.num_computed = static_cast<int>(seq.shared_blocks * block_size_);
}

void BatchingModel::shareFullBlocks(Seq& seq) {
  const size_t full =
      std::min(seq.block_hashes.size(), static_cast<size_t>(seq.num_computed / block_size_));
  for (auto i = static_cast<size_t>(seq.shared_blocks); i < full; ++i) {
    const uint64_t hash = seq.block_hashes[i];
    --seq.private_blocks;
    auto [entry, inserted] = cache_.try_emplace(hash);
    if (inserted) {
      entry->second.refs = 1;
      if (kv_events_) recordStored(seq, i);
    } else {
      acquireEntry(hash, entry->second);
      ++free_blocks_;  // another request computed the same block: ours is a duplicate
    }
    ++seq.shared_blocks;
  }
}

void BatchingModel::schedule(Seq* seq, int tokens, TimeNs at, StepPlan& plan, int& budget) {
  seq->scheduled = tokens;
  if (seq->first_scheduled < 0) seq->first_scheduled = at;
  budget -= tokens;
  plan.batched += tokens;
  plan.context += seq->num_computed + tokens;
  plan.prefill |= seq->numTokens() - seq->num_computed > 1;
  step_.push_back(seq);
}

// Running requests in admission order; preempts the newest on a KV shortage. Returns whether
// something was preempted.
bool BatchingModel::scheduleRunningDecodes(TimeNs at, StepPlan& plan, int& budget) {
  bool preempted = false;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Seq* seq = running_[i];
    const int tokens = std::min(seq->numTokens() - seq->num_computed, budget);
    bool self_preempted = false;
    while (!allocate(*seq, tokens)) {
      Seq* victim = running_.back();
      running_.pop_back();
      release(*victim);
      waiting_.push_front(victim);
      ++preemptions_;
      preempted = true;
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    schedule(seq, tokens, at, plan, budget);
    ++i;
  }
  return preempted;
}

bool BatchingModel::admitWaiting(TimeNs at, StepPlan& plan, int& budget, bool whole) {
  // The head of the queue, with its cached prefix: all its remaining prompt (`whole`, which must
  // fit the budget unless it is the step's first) or a chunk of it, if its blocks can be had.
  Seq* seq = waiting_.front();
  acquirePrefix(*seq);
  const int cached_tokens = seq->num_computed;
  const int remaining = seq->numTokens() - seq->num_computed;
  const int tokens = whole ? remaining : std::min(remaining, budget);
  if ((whole && tokens > budget && !step_.empty()) || !allocate(*seq, tokens)) {
    release(*seq);
    return false;
  }
  prefix_queries_ += seq->numTokens();
  prefix_hits_ += cached_tokens;
  waiting_.pop_front();
  seq->order = next_order_++;
  running_.push_back(seq);
  if (groupEnabled()) eager_.push_back(seq);
  schedule(seq, tokens, at, plan, budget);
  return true;
}

void BatchingModel::scheduleChunked(TimeNs at, StepPlan& plan) {
  int budget = max_num_batched_tokens_;
  const bool preempted = scheduleRunningDecodes(at, plan, budget);
  while (!preempted && budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < max_num_seqs_ &&
         admitWaiting(at, plan, budget, false)) {
  }
}

void BatchingModel::scheduleSeparate(TimeNs at, StepPlan& plan) {
  // Whole prompts first, in FIFO order, while they fit the budget (the first one always does,
  // or a prompt longer than the budget would never run), the batch and the KV cache.
  int budget = max_num_batched_tokens_;
  while (!waiting_.empty() && static_cast<int>(running_.size()) < max_num_seqs_ &&
         admitWaiting(at, plan, budget, true)) {
  }
  if (!step_.empty()) return;                // a prefill step: the running requests wait for it
  budget = std::numeric_limits<int>::max();  // decodes are one token each, never chunked
  scheduleRunningDecodes(at, plan, budget);
}

TimeNs BatchingModel::extendDecodes(const StepPlan& plan) {
  // Every request in step_ decodes one token per step; find how many more steps the free KV
  // blocks allow (up to N - 1), then allocate them and price each step (the context grows by
  // one token per request per step).
  const int n = static_cast<int>(step_.size());
  int extra = config_.num_scheduler_steps - 1;  // multi-step only: a cold read is fine
  for (; extra > 0; --extra) {
    int64_t needed = 0;
    for (const Seq* seq : step_) {
      const int64_t tokens = static_cast<int64_t>(seq->num_computed) + 1 + extra;
      needed += (tokens + block_size_ - 1) / block_size_ - seq->blocksHeld();
    }
    if (needed <= free_blocks_ + evictable_blocks_) break;
  }
  TimeNs added = 0;
  for (int k = 1; k <= extra; ++k) {
    added += stepDurationNs(n, plan.context + static_cast<int64_t>(k) * n, n);
  }
  for (Seq* seq : step_) {
    allocate(*seq, 1 + extra);  // cannot fail: checked above
    seq->scheduled = 1 + extra;
  }
  step_decode_steps_ = 1 + extra;
  return added;
}

void BatchingModel::startStep(TimeNs at) {
  in_step_ = false;
  group_in_step_ = false;
  step_.clear();
  step_decode_steps_ = 1;
  while (!pending_.empty() && pending_.front()->ready <= at) {
    waiting_.push_back(pending_.front());
    pending_.pop_front();
  }
  StepPlan plan;
  if (group_size_ == 0 || !planWithGroup(at, plan)) {
    leaveAll();  // order matters this step: request by request
    if (chunked_prefill_) {
      scheduleChunked(at, plan);
    } else {
      scheduleSeparate(at, plan);
    }
  }
  if (!group_in_step_ || !step_.empty()) lookahead_at_ = -1;
  if (step_.empty() && !group_in_step_) return;
  const auto seqs = static_cast<int64_t>(step_.size()) + (group_in_step_ ? group_size_ : 0);
  TimeNs duration = stepDurationNs(plan.batched, plan.context, seqs);
  if (multi_step_ && !plan.prefill) duration += extendDecodes(plan);
  in_step_ = true;
  step_start_ = at;
  step_end_ = at + duration;
}

void BatchingModel::setDetail(Detail detail, bool lazy) {
  leaveAll();
  next_event_ = kNotKnown;
  detail_ = detail;
  lazy_enabled_ = lazy && detail == Detail::kMilestones;
}

bool BatchingModel::groupEnabled() const {
  return lazy_enabled_ && !multi_step_ && chunked_prefill_;
}

size_t BatchingModel::dueSlot(const Seq& seq) const {
  // At the start of group step p a member has computed num_computed + (p - lazy_base) tokens
  // and needs a new block when that count is a multiple of the block size.
  const int64_t bs = block_size_;
  return static_cast<size_t>(((seq.lazy_base - seq.num_computed) % bs + bs) % bs);
}

void BatchingModel::join(Seq& seq) {
  const int64_t bs = block_size_;
  // Decoding and holding exactly the blocks of its computed tokens (what step-by-step leaves).
  if (seq.lazy || seq.numTokens() - seq.num_computed != 1 ||
      seq.blocksHeld() != (seq.num_computed + bs - 1) / bs) {
    return;
  }
  if (bs > static_cast<int64_t>(due_inline_.size()) && block_due_.empty()) {
    block_due_.assign(static_cast<size_t>(bs), 0);
  }
  seq.lazy = true;
  seq.lazy_base = group_steps_;
  seq.group_of = id_in_pool_;
  ++group_size_;
  group_sum_ += seq.num_computed - seq.lazy_base;
  ++dueAt(dueSlot(seq));
  finish_heap_.push(seq.lazy_base + (seq.max_tokens - seq.produced), &seq);
  next_finish_at_ = finish_heap_.top().at;
}

void BatchingModel::leave(Seq& seq, bool step_in_flight) {
  // Bring the member up to date; during a group step in flight its block for that step is
  // already taken.
  const int64_t bs = block_size_;
  const int64_t k = group_steps_ - seq.lazy_base;
  --dueAt(dueSlot(seq));
  group_sum_ -= seq.num_computed - seq.lazy_base;
  --group_size_;
  seq.lazy = false;
  seq.num_computed += static_cast<int>(k);
  seq.produced += static_cast<int>(k);
  const int64_t held = (seq.num_computed + (step_in_flight ? 1 : 0) + bs - 1) / bs;
  seq.private_blocks = static_cast<int>(held - seq.shared_blocks);
  if (k > 0) seq.last_token = group_last_end_;
}

void BatchingModel::leaveAll() {
  if (group_size_ == 0) return;
  for (Seq* seq : running_) {
    if (seq->lazy) leave(*seq, false);
  }
  finish_heap_.clear();
  next_finish_at_ = std::numeric_limits<int64_t>::max();
  eager_ = running_;
}

bool BatchingModel::planWithGroup(TimeNs at, StepPlan& plan) {
  // Everyone's request must fit: the budget (then the order of the running requests does not
  // decide who is served) and the free KV blocks (then nobody is preempted).
  const int64_t bs = block_size_;
  int64_t eager_tokens = 0;
  int64_t eager_blocks = 0;
  for (const Seq* seq : eager_) {
    const int64_t tokens = seq->numTokens() - seq->num_computed;
    eager_tokens += tokens;
    eager_blocks +=
        std::max<int64_t>(0, (seq->num_computed + tokens + bs - 1) / bs - seq->blocksHeld());
  }
  int budget = max_num_batched_tokens_;
  if (eager_tokens + group_size_ > budget) return false;
  const int32_t due = dueAt(group_steps_ % bs);
  if (due + eager_blocks > free_blocks_ + evictable_blocks_) return false;
  takeBlocks(due);
  for (Seq* seq : eager_) {
    const int tokens = seq->numTokens() - seq->num_computed;
    allocate(*seq, tokens);  // cannot fail: counted above
    schedule(seq, tokens, at, plan, budget);
  }
  group_in_step_ = true;
  budget -= static_cast<int>(group_size_);
  plan.batched += group_size_;
  plan.context += group_sum_ + group_size_ * (group_steps_ + 1);
  while (budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < max_num_seqs_ &&
         admitWaiting(at, plan, budget, false)) {
  }
  return true;
}

void BatchingModel::emit(Seq& seq, bool finished, TimeNs previous_token,
                         std::vector<TokenEvent>& events) {
  const bool first = seq.last_token < 0 && seq.reported == 0;
  if (detail_ == Detail::kMilestones && !first && !finished) return;
  TokenEvent event;
  event.id = seq.id;
  event.tokens = seq.produced - seq.reported;
  event.finished = finished;
  event.time = step_end_;
  event.arrival = seq.arrival;
  event.first_scheduled = seq.first_scheduled;
  event.previous_token = first ? -1 : previous_token;
  events.push_back(event);
  seq.reported = seq.produced;
  if (event_hint_ != nullptr) event_hint_(event_hint_context_, seq.id);
}

void BatchingModel::finishStep(std::vector<TokenEvent>& events) {
  in_step_ = false;
  busy_seconds_ += static_cast<double>(step_end_ - step_start_) / 1e9;
  bool any_done = false;
  // The group's members whose last token came with this step (the heap finds them; stale
  // entries are skipped), brought up to date, in admission order.
  finishing_.clear();
  const bool group_step = group_in_step_;
  if (group_in_step_) {
    group_in_step_ = false;
    ++group_steps_;
    generated_ += group_size_;
    group_last_end_ = step_end_;
    while (next_finish_at_ <= group_steps_) {
      const auto entry = finish_heap_.top();
      finish_heap_.pop();
      next_finish_at_ =
          finish_heap_.empty() ? std::numeric_limits<int64_t>::max() : finish_heap_.top().at;
      Seq& seq = *entry.item;
      if (!isLive(seq, entry.at)) continue;
      leave(seq, false);
      finishing_.push_back(&seq);
    }
    std::sort(finishing_.begin(), finishing_.end(),
              [](const Seq* a, const Seq* b) { return a->order < b->order; });
  }
  // Requests are finished in admission order (step_ is in it too), as the step-by-step path
  // goes: it decides the order of the events and of the KV blocks returned to the cache.
  size_t member = 0;
  for (Seq* seq : step_) {
    if (seq == nullptr) continue;  // cancelled during the step
    for (; member < finishing_.size() && finishing_[member]->order < seq->order; ++member) {
      finishMember(*finishing_[member], events);
      any_done = true;
    }
    seq->num_computed += seq->scheduled;
    seq->scheduled = 0;
    if (prefix_caching_) shareFullBlocks(*seq);
    if (seq->num_computed < seq->numTokens()) continue;  // prefill chunk: no token yet
    // One token per computed position past the known ones: 1, or N after N decode steps,
    // never past the request's limit.
    const int tokens =
        std::min(seq->num_computed - seq->numTokens() + 1, seq->max_tokens - seq->produced);
    seq->produced += tokens;
    generated_ += tokens;
    seq->num_computed = seq->numTokens() - 1;  // the newest token's KV is computed next step
    const bool finished = seq->produced >= seq->max_tokens;
    emit(*seq, finished, seq->last_token, events);
    seq->last_token = step_end_;
    if (finished) {
      release(*seq);
      seq->done = true;
      any_done = true;
    }
  }
  for (; member < finishing_.size(); ++member) {
    finishMember(*finishing_[member], events);
    any_done = true;
  }
  if (any_done || !finishing_.empty()) lookahead_at_ = -1;
  // Requests that decode from the next step on join the group; eager_ keeps the others.
  if (groupEnabled()) {
    for (Seq* seq : step_) {
      if (seq != nullptr && !seq->done) join(*seq);
    }
    if (!group_step) {
      eager_.clear();  // a step request by request: running_ may have changed in any way
      for (Seq* seq : running_) {
        if (!seq->lazy && !seq->done) eager_.push_back(seq);
      }
    } else {
      eager_.erase(std::remove_if(eager_.begin(), eager_.end(),
                                  [](const Seq* s) { return s->lazy || s->done; }),
                   eager_.end());
    }
  }
  if (any_done) {
    // The finished ones, known without looking at every running request (each look is a cache
    // miss): running_ is scanned by pointer only.
    done_ptrs_.clear();
    for (Seq* seq : finishing_) done_ptrs_.push_back(seq);
    for (Seq* seq : step_) {
      if (seq != nullptr && seq->done) done_ptrs_.push_back(seq);
    }
    if (done_ptrs_.size() == 1) {
      // The usual case: one finished, found and erased without a pass over the rest.
      running_.erase(std::find(running_.begin(), running_.end(), done_ptrs_.front()));
    } else {
      std::sort(done_ptrs_.begin(), done_ptrs_.end());
      running_.erase(std::remove_if(running_.begin(), running_.end(),
                                    [this](Seq* s) {
                                      return std::binary_search(done_ptrs_.begin(),
                                                                done_ptrs_.end(), s);
                                    }),
                     running_.end());
    }
    for (Seq* seq : done_ptrs_) forget(*seq);  // their pointers are not used again
  }
  step_.clear();
}

void BatchingModel::finishMember(Seq& seq, std::vector<TokenEvent>& events) {
  emit(seq, true, step_start_, events);
  release(seq);
  seq.done = true;
}

ExportedGauges BatchingModel::gauges() const {
  return {static_cast<double>(running_.size()), static_cast<double>(waiting_.size()),
          1.0 - static_cast<double>(free_blocks_ + evictable_blocks_) /
                    static_cast<double>(kv_blocks_)};
}

EngineLoad BatchingModel::load() const {
  EngineLoad load;
  load.running = static_cast<int>(running_.size());
  load.waiting = static_cast<int>(waiting_.size());
  load.kv_usage = 1.0 - static_cast<double>(free_blocks_ + evictable_blocks_) /
                            static_cast<double>(kv_blocks_);
  load.preemptions_total = preemptions_;
  load.busy_seconds_total = busy_seconds_;
  load.generated_tokens_total = generated_;
  load.kv_capacity_tokens = kv_blocks_ * block_size_;
  load.kv_block_size = static_cast<int>(block_size_);
  load.prefix_cache_queries_total = prefix_queries_;
  load.prefix_cache_hits_total = prefix_hits_;
  load.aborted_requests_total = aborted_;
  load.aborted_running_seconds_total = aborted_running_seconds_;
  load.aborted_computed_tokens_total = aborted_tokens_;
  return load;
}

}  // namespace switchyard::engine
