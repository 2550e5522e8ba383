#include "engine/batching_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace switchyard::engine {

BatchingModel::BatchingModel(PerfConfig config) : config_(std::move(config)) {
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
}

TimeNs BatchingModel::stepDurationNs(int64_t batched_tokens, int64_t context_tokens,
                                     int64_t sequences) const {
  const double compute_s = 2.0 * config_.params * static_cast<double>(batched_tokens) /
                           (config_.peak_flops * config_.compute_efficiency);
  const double memory_s =
      (config_.weight_bytes + static_cast<double>(context_tokens) * config_.kv_bytes_per_token) /
      (config_.bandwidth_bytes_per_s * config_.bandwidth_efficiency);
  const double step_ns = std::max(compute_s, memory_s) * 1e9 + config_.step_overhead_ns +
                        static_cast<double>(sequences * config_.seq_overhead_ns);
  return std::max<TimeNs>(1, std::llround(step_ns * slowdown_));
}

TimeNs BatchingModel::prefillOnlyNs(int tokens) const {
  return stepDurationNs(std::max(tokens, 1), std::max(tokens, 1));
}

void BatchingModel::setSlowdown(double factor) {
  // Applies from the next step on; the step in flight was already launched.
  slowdown_ = factor > 0 && std::isfinite(factor) ? factor : 1;
}

void BatchingModel::submit(const ModelRequest& request, TimeNs now) {
  Seq seq;
  seq.id = request.id;
  // Defensive clamp of the documented precondition: a request that could never fit would wait
  // forever.
  const int capacity = static_cast<int>(std::min<int64_t>(config_.kvCapacityTokens(), 1 << 30));
  seq.prompt_tokens = std::clamp(request.prompt_tokens, 1, std::max(1, capacity - 1));
  seq.max_tokens = std::clamp(request.max_tokens, 1, std::max(1, capacity - seq.prompt_tokens));
  if (config_.prefix_caching) seq.block_hashes = request.block_hashes;
  seq.arrival = now;
  seq.ready = now + config_.request_overhead_ns;
  auto [it, inserted] = seqs_.emplace(request.id, std::move(seq));
  if (!inserted) return;  // duplicate id: the driver's bug; keep the first
  if (config_.request_overhead_ns > 0) {
    pending_.push_back(&it->second);  // startStep() moves it on once it is ready
    return;
  }
  if (lazy_ && !in_step_) materialize();
  waiting_.push_back(&it->second);
  if (!in_step_) startStep(now);
}

TimeNs BatchingModel::nextEventTime() const {
  if (in_step_) return step_end_;
  return pending_.empty() ? -1 : pending_.front()->ready;
}

void BatchingModel::cancel(RequestId id, TimeNs /*now*/) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Seq* seq = &it->second;
  if (lazy_ && std::find(running_.begin(), running_.end(), seq) != running_.end()) {
    // Bring this one request up to date (the plain step in flight has its block already) and
    // take it out of the lazy sums; the others stay lazy.
    const int64_t k = plain_steps_ - lazy_base_;
    const int64_t held = (seq->num_computed + k + (step_plain_ ? 1 : 0) + config_.block_size - 1) /
                         config_.block_size;
    --block_due_[static_cast<size_t>(blockDue(*seq))];
    lazy_context_ -= seq->num_computed;
    seq->private_blocks = static_cast<int>(
        std::max<int64_t>(held, seq->blocksHeld()) - static_cast<int64_t>(seq->shared.size()));
  }
  std::replace(step_.begin(), step_.end(), seq, static_cast<Seq*>(nullptr));
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  pending_.erase(std::remove(pending_.begin(), pending_.end(), seq), pending_.end());
  release(*seq);
  seqs_.erase(it);
}

void BatchingModel::advance(TimeNs now, std::vector<TokenEvent>& events) {
  for (;;) {
    if (in_step_) {
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

bool BatchingModel::takeBlocks(int64_t count) {
  if (free_blocks_ + evictable_blocks_ < count) return false;
  while (free_blocks_ < count) {
    auto oldest = lru_.begin();
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
      (static_cast<int64_t>(seq.num_computed) + new_tokens + config_.block_size - 1) /
          config_.block_size -
      seq.blocksHeld();
  if (needed <= 0) return true;
  if (!takeBlocks(needed)) return false;
  seq.private_blocks += static_cast<int>(needed);
  return true;
}

void BatchingModel::release(Seq& seq) {
  // Last blocks first, so that the tail of a prompt is evicted before its shared head.
  for (auto it = seq.shared.rbegin(); it != seq.shared.rend(); ++it) {
    auto entry = cache_.find(*it);
    if (entry == cache_.end()) continue;
    if (--entry->second.refs == 0) {
      entry->second.tick = ++tick_;
      lru_.emplace(entry->second.tick, *it);
      ++evictable_blocks_;
    }
  }
  seq.shared.clear();
  free_blocks_ += seq.private_blocks;
  seq.private_blocks = 0;
  seq.num_computed = 0;
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
                                static_cast<size_t>((seq.numTokens() - 1) / config_.block_size));
  for (size_t i = 0; i < limit; ++i) {
    auto entry = cache_.find(seq.block_hashes[i]);
    if (entry == cache_.end()) break;
    acquireEntry(entry->first, entry->second);
    seq.shared.push_back(entry->first);
  }
  seq.num_computed = static_cast<int>(seq.shared.size()) * config_.block_size;
}

void BatchingModel::shareFullBlocks(Seq& seq) {
  const size_t full =
      std::min(seq.block_hashes.size(), static_cast<size_t>(seq.num_computed / config_.block_size));
  for (size_t i = seq.shared.size(); i < full; ++i) {
    const uint64_t hash = seq.block_hashes[i];
    --seq.private_blocks;
    auto [entry, inserted] = cache_.try_emplace(hash);
    if (inserted) {
      entry->second.refs = 1;
    } else {
      acquireEntry(hash, entry->second);
      ++free_blocks_;  // another request computed the same block: ours is a duplicate
    }
    seq.shared.push_back(hash);
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
  running_.push_back(seq);
  schedule(seq, tokens, at, plan, budget);
  return true;
}

void BatchingModel::scheduleChunked(TimeNs at, StepPlan& plan) {
  int budget = config_.max_num_batched_tokens;
  const bool preempted = scheduleRunningDecodes(at, plan, budget);
  while (!preempted && budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < config_.max_num_seqs &&
         admitWaiting(at, plan, budget, false)) {
  }
}

void BatchingModel::scheduleSeparate(TimeNs at, StepPlan& plan) {
  // Whole prompts first, in FIFO order, while they fit the budget (the first one always does,
  // or a prompt longer than the budget would never run), the batch and the KV cache.
  int budget = config_.max_num_batched_tokens;
  while (!waiting_.empty() && static_cast<int>(running_.size()) < config_.max_num_seqs &&
         admitWaiting(at, plan, budget, true)) {
  }
  if (!step_.empty()) return;  // a prefill step: the running requests wait for it
  budget = std::numeric_limits<int>::max();  // decodes are one token each, never chunked
  scheduleRunningDecodes(at, plan, budget);
}

TimeNs BatchingModel::extendDecodes(const StepPlan& plan) {
  // Every request in step_ decodes one token per step; find how many more steps the free KV
  // blocks allow (up to N - 1), then allocate them and price each step (the context grows by
  // one token per request per step).
  const int n = static_cast<int>(step_.size());
  int extra = config_.num_scheduler_steps - 1;
  for (; extra > 0; --extra) {
    int64_t needed = 0;
    for (const Seq* seq : step_) {
      const int64_t tokens = static_cast<int64_t>(seq->num_computed) + 1 + extra;
      needed += (tokens + config_.block_size - 1) / config_.block_size - seq->blocksHeld();
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
  step_plain_ = false;
  step_.clear();
  step_decode_steps_ = 1;
  while (!pending_.empty() && pending_.front()->ready <= at) {
    waiting_.push_back(pending_.front());
    pending_.pop_front();
  }
  if (startPlainStep(at)) return;
  if (lazy_) materialize();
  StepPlan plan;
  if (config_.chunked_prefill) {
    scheduleChunked(at, plan);
  } else {
    scheduleSeparate(at, plan);
  }
  if (step_.empty()) return;
  const auto seqs = static_cast<int64_t>(step_.size());
  TimeNs duration = stepDurationNs(plan.batched, plan.context, seqs);
  if (config_.num_scheduler_steps > 1 && !plan.prefill) duration += extendDecodes(plan);
  in_step_ = true;
  step_start_ = at;
  step_end_ = at + duration;
}

void BatchingModel::setDetail(Detail detail, bool lazy) {
  if (lazy_) materialize();
  detail_ = detail;
  lazy_enabled_ = lazy && detail == Detail::kMilestones;
}

int BatchingModel::blockDue(const Seq& seq) const {
  // Before plain step p (plain_steps_ == p) a lazy request has computed c + (p - base) tokens and
  // needs a new block when that count is a multiple of the block size.
  const int64_t bs = config_.block_size;
  return static_cast<int>(((lazy_base_ - seq.num_computed) % bs + bs) % bs);
}

bool BatchingModel::lazify() {
  const int64_t bs = config_.block_size;
  for (const Seq* seq : running_) {
    // Decoding, holding exactly the blocks of its computed tokens (what the step-by-step path
    // leaves), or it is not a plain request.
    if (seq->numTokens() - seq->num_computed != 1 ||
        seq->blocksHeld() != (seq->num_computed + bs - 1) / bs) {
      return false;
    }
  }
  lazy_base_ = plain_steps_;
  lazy_context_ = 0;
  block_due_.assign(static_cast<size_t>(bs), 0);
  int64_t first_finish = std::numeric_limits<int64_t>::max();
  for (const Seq* seq : running_) {
    lazy_context_ += seq->num_computed;
    ++block_due_[static_cast<size_t>(blockDue(*seq))];
    first_finish = std::min<int64_t>(first_finish, seq->max_tokens - seq->produced);
  }
  lazy_finish_ = lazy_base_ + first_finish;
  lazy_ = true;
  return true;
}

void BatchingModel::materialize() {
  const int64_t k = plain_steps_ - lazy_base_;
  const int64_t bs = config_.block_size;
  lazy_ = false;
  if (k == 0) return;
  for (Seq* seq : running_) {
    seq->num_computed += static_cast<int>(k);
    seq->produced += static_cast<int>(k);
    const int64_t held = (seq->num_computed + bs - 1) / bs;
    seq->private_blocks = static_cast<int>(held - static_cast<int64_t>(seq->shared.size()));
    seq->last_token = lazy_last_end_;
  }
}

bool BatchingModel::startPlainStep(TimeNs at) {
  if (!lazy_enabled_ || config_.num_scheduler_steps != 1 || !config_.chunked_prefill ||
      running_.empty() || !waiting_.empty() ||
      static_cast<int64_t>(running_.size()) > config_.max_num_batched_tokens) {
    return false;
  }
  if (!lazy_ && !lazify()) return false;
  const int32_t needed = block_due_[static_cast<size_t>(plain_steps_ % config_.block_size)];
  if (!takeBlocks(needed)) return false;  // a preemption is due: the step-by-step path
  const auto n = static_cast<int64_t>(running_.size());
  const int64_t context = lazy_context_ + n * (plain_steps_ - lazy_base_) + n;
  step_plain_ = true;
  in_step_ = true;
  step_start_ = at;
  step_end_ = at + stepDurationNs(n, context, n);
  return true;
}

void BatchingModel::finishPlainStep(std::vector<TokenEvent>& events) {
  in_step_ = false;
  step_plain_ = false;
  busy_seconds_ += static_cast<double>(step_end_ - step_start_) / 1e9;
  ++plain_steps_;
  generated_ += static_cast<int64_t>(running_.size());
  lazy_last_end_ = step_end_;
  if (plain_steps_ < lazy_finish_) return;
  // Someone may have produced its last token: bring everyone up to date and finish them.
  materialize();
  bool any_done = false;
  for (Seq* seq : running_) {
    if (seq->produced < seq->max_tokens) continue;
    emit(*seq, true, step_start_, events);
    release(*seq);
    seq->done = true;
    any_done = true;
  }
  if (!any_done) return;
  done_.clear();
  for (const Seq* seq : running_) {
    if (seq->done) done_.push_back(seq->id);
  }
  running_.erase(
      std::remove_if(running_.begin(), running_.end(), [](const Seq* s) { return s->done; }),
      running_.end());
  for (RequestId id : done_) seqs_.erase(id);
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
}

void BatchingModel::finishStep(std::vector<TokenEvent>& events) {
  if (step_plain_) {
    finishPlainStep(events);
    return;
  }
  in_step_ = false;
  busy_seconds_ += static_cast<double>(step_end_ - step_start_) / 1e9;
  bool any_done = false;
  for (Seq* seq : step_) {
    if (seq == nullptr) continue;  // cancelled during the step
    seq->num_computed += seq->scheduled;
    seq->scheduled = 0;
    if (config_.prefix_caching) shareFullBlocks(*seq);
    if (seq->num_computed < seq->numTokens()) continue;  // prefill chunk: no token yet
    // One token per computed position past the known ones: 1, or N after N decode steps,
    // never past the request's limit.
    const int tokens = std::min(seq->num_computed - seq->numTokens() + 1,
                                seq->max_tokens - seq->produced);
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
  if (!any_done) {
    step_.clear();
    return;
  }
  running_.erase(
      std::remove_if(running_.begin(), running_.end(), [](const Seq* s) { return s->done; }),
      running_.end());
  for (Seq* seq : step_) {
    if (seq != nullptr && seq->done) seqs_.erase(seq->id);  // the pointer is not used again
  }
  step_.clear();
}

EngineLoad BatchingModel::load() const {
  EngineLoad load;
  load.running = static_cast<int>(running_.size());
  load.waiting = static_cast<int>(waiting_.size());
  load.kv_usage = 1.0 - static_cast<double>(free_blocks_ + evictable_blocks_) /
                            static_cast<double>(config_.kv_blocks);
  load.preemptions_total = preemptions_;
  load.busy_seconds_total = busy_seconds_;
  load.generated_tokens_total = generated_;
  load.kv_capacity_tokens = config_.kvCapacityTokens();
  load.prefix_cache_queries_total = prefix_queries_;
  load.prefix_cache_hits_total = prefix_hits_;
  return load;
}

}  // namespace switchyard::engine
