#include "engine/batching_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace switchyard::engine {

BatchingModel::BatchingModel(PerfConfig config) : config_(std::move(config)) {
  if (!(config_.params > 0) || !(config_.peak_flops > 0) || !(config_.bandwidth_bytes_per_s > 0) ||
      !(config_.kv_bytes_per_token > 0) || config_.kv_blocks < 1 || config_.block_size < 1 ||
      config_.max_num_seqs < 1 || config_.max_num_batched_tokens < 1 ||
      !(config_.compute_efficiency > 0) || !(config_.bandwidth_efficiency > 0) ||
      config_.step_overhead_ns < 0) {
    throw std::invalid_argument(
        fmt::format("invalid performance config for {} on {}", config_.model, config_.gpu));
  }
  free_blocks_ = config_.kv_blocks;
}

TimeNs BatchingModel::stepDurationNs(int64_t batched_tokens, int64_t context_tokens) const {
  const double compute_s = 2.0 * config_.params * static_cast<double>(batched_tokens) /
                           (config_.peak_flops * config_.compute_efficiency);
  const double memory_s =
      (config_.weight_bytes + static_cast<double>(context_tokens) * config_.kv_bytes_per_token) /
      (config_.bandwidth_bytes_per_s * config_.bandwidth_efficiency);
  const double step_ns = std::max(compute_s, memory_s) * 1e9 + config_.step_overhead_ns;
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
  auto [it, inserted] = seqs_.emplace(request.id, std::move(seq));
  if (!inserted) return;  // duplicate id: the driver's bug; keep the first
  waiting_.push_back(&it->second);
  if (!in_step_) startStep(now);
}

void BatchingModel::cancel(RequestId id, TimeNs now) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Seq* seq = &it->second;
  ++aborted_;
  aborted_tokens_ += seq->num_computed;
  if (seq->first_scheduled >= 0 && now > seq->first_scheduled) {
    aborted_running_seconds_ += static_cast<double>(now - seq->first_scheduled) / 1e9;
  }
  std::replace(step_.begin(), step_.end(), seq, static_cast<Seq*>(nullptr));
  running_.erase(std::remove(running_.begin(), running_.end(), seq), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), seq), waiting_.end());
  release(*seq);
  seqs_.erase(it);
}

void BatchingModel::advance(TimeNs now, std::vector<TokenEvent>& events) {
  while (in_step_ && step_end_ <= now) {
    const TimeNs end = step_end_;
    finishStep(events);
    startStep(end);
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

void BatchingModel::startStep(TimeNs at) {
  in_step_ = false;
  step_.clear();
  int budget = config_.max_num_batched_tokens;
  bool preempted = false;
  int64_t batched = 0;
  int64_t context = 0;
  auto schedule = [&](Seq* seq, int tokens) {
    seq->scheduled = tokens;
    if (seq->first_scheduled < 0) seq->first_scheduled = at;
    budget -= tokens;
    batched += tokens;
    context += seq->num_computed + tokens;
    step_.push_back(seq);
  };

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
    schedule(seq, tokens);
    ++i;
  }

  while (!preempted && budget > 0 && !waiting_.empty() &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Seq* seq = waiting_.front();
    acquirePrefix(*seq);
    const int cached_tokens = seq->num_computed;
    const int tokens = std::min(seq->numTokens() - seq->num_computed, budget);
    if (!allocate(*seq, tokens)) {
      release(*seq);
      break;
    }
    prefix_queries_ += seq->numTokens();
    prefix_hits_ += cached_tokens;
    waiting_.pop_front();
    running_.push_back(seq);
    schedule(seq, tokens);
  }

  if (step_.empty()) return;
  in_step_ = true;
  step_start_ = at;
  step_end_ = at + stepDurationNs(batched, context);
}

void BatchingModel::finishStep(std::vector<TokenEvent>& events) {
  in_step_ = false;
  busy_seconds_ += static_cast<double>(step_end_ - step_start_) / 1e9;
  bool any_done = false;
  for (Seq* seq : step_) {
    if (seq == nullptr) continue;  // cancelled during the step
    seq->num_computed += seq->scheduled;
    seq->scheduled = 0;
    if (config_.prefix_caching) shareFullBlocks(*seq);
    if (seq->num_computed < seq->numTokens()) continue;  // prefill chunk: no token yet
    ++seq->produced;
    TokenEvent event;
    event.id = seq->id;
    event.tokens = 1;
    event.finished = seq->produced >= seq->max_tokens;
    event.time = step_end_;
    event.arrival = seq->arrival;
    event.first_scheduled = seq->first_scheduled;
    event.previous_token = seq->last_token;
    events.push_back(event);
    seq->last_token = step_end_;
    if (event.finished) {
      release(*seq);
      seq->done = true;
      any_done = true;
    }
  }
  step_.clear();
  if (!any_done) return;
  running_.erase(
      std::remove_if(running_.begin(), running_.end(), [](const Seq* s) { return s->done; }),
      running_.end());
  for (auto it = seqs_.begin(); it != seqs_.end();) {
    it = it->second.done ? seqs_.erase(it) : std::next(it);
  }
}

EngineLoad BatchingModel::load() const {
  EngineLoad load;
  load.running = static_cast<int>(running_.size());
  load.waiting = static_cast<int>(waiting_.size());
  load.kv_usage = 1.0 - static_cast<double>(free_blocks_ + evictable_blocks_) /
                            static_cast<double>(config_.kv_blocks);
  load.preemptions_total = preemptions_;
  load.busy_seconds_total = busy_seconds_;
  load.kv_capacity_tokens = config_.kvCapacityTokens();
  load.prefix_cache_queries_total = prefix_queries_;
  load.prefix_cache_hits_total = prefix_hits_;
  load.aborted_requests_total = aborted_;
  load.aborted_running_seconds_total = aborted_running_seconds_;
  load.aborted_computed_tokens_total = aborted_tokens_;
  return load;
}

}  // namespace switchyard::engine
