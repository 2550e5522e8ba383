#include "fleet/kv_index/prompt_blocks.h"

#include <algorithm>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace switchyard::fleet::kv_index {

PromptBlockHasher::PromptBlockHasher(uint32_t block_tokens, uint64_t seed)
    : block_tokens_(std::clamp<uint32_t>(block_tokens, 1, kMaxBlockTokens)),
      block_bytes_(block_tokens_ * kBytesPerToken),
      seed_(seed),
      chain_(seed) {
  blocks_.reserve(kMaxBlocks);
}

void PromptBlockHasher::reset() {
  chain_ = seed_;
  partial_ = 0;
  blocks_.clear();
}

uint64_t chainBlockHash(uint64_t previous, std::string_view block) {
  return XXH3_64bits_withSeed(block.data(), block.size(), previous);
}

void PromptBlockHasher::push(const char* data) {
  chain_ = chainBlockHash(chain_, {data, block_bytes_});
  if (blocks_.size() < kMaxBlocks) blocks_.push_back(chain_);
}

void PromptBlockHasher::text(std::string_view text) {
  if (blocks_.size() >= kMaxBlocks) return;
  const char* p = text.data();
  size_t left = text.size();
  if (partial_ > 0) {
    const size_t take = std::min(left, block_bytes_ - partial_);
    std::memcpy(buffer_.data() + partial_, p, take);
    partial_ += take;
    p += take;
    left -= take;
    if (partial_ < block_bytes_) return;
    push(buffer_.data());
    partial_ = 0;
  }
  // Whole blocks straight from the text, without a copy.
  while (left >= block_bytes_ && blocks_.size() < kMaxBlocks) {
    push(p);
    p += block_bytes_;
    left -= block_bytes_;
  }
  if (left < block_bytes_) {
    std::memcpy(buffer_.data(), p, left);
    partial_ = left;
  }
}

std::vector<uint64_t> hashPromptBlocks(std::string_view text, uint32_t block_tokens,
                                       uint64_t seed) {
  PromptBlockHasher hasher(block_tokens, seed);
  hasher.text(text);
  const std::span<const uint64_t> blocks = hasher.blocks();
  return {blocks.begin(), blocks.end()};
}

}  // namespace switchyard::fleet::kv_index
