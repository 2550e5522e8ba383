// PromptBlockHasher: cuts a request's prompt text into fixed-size blocks and hashes them as a
// chain, so that block i's hash names the whole prefix up to the end of block i.
//
// The prompt is rendered the way the engine emulator counts it (engine/openai_emulation.h): the
// text of every chat message's content (text parts of content arrays included), in order, with
// nothing between them; or the completion prompt string(s). Token-id prompts add nothing. Tokens
// are estimated as 4 bytes each (the gateway's and the emulator's estimate), so a block of
// `block_tokens` tokens is 4 × block_tokens bytes of text. Only full blocks are hashed, as an
// engine only caches full KV blocks. Hash: XXH3-64 of the block's bytes seeded with the previous
// block's hash (the first block with `seed`).
//
// One hasher per worker thread; not thread-safe. Fed through api::PromptTextSink by the request
// inspector while it parses the body. No allocation after construction: the block list is
// reserved for kMaxBlocks, and a longer prompt stops adding blocks (its first kMaxBlocks still
// route). Cost: one XXH3 pass over the prompt bytes (bench/micro/prefix_cache_bench.cc).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "api/request_inspector.h"

namespace switchyard::fleet::kv_index {

inline constexpr size_t kBytesPerToken = 4;

class PromptBlockHasher final : public api::PromptTextSink {
 public:
  static constexpr uint32_t kMaxBlockTokens = 256;
  static constexpr size_t kMaxBlocks = 16384;  // 256 Ki tokens at 16 per block

  // block_tokens in [1, kMaxBlockTokens] (validated by the config parser; clamped here).
  explicit PromptBlockHasher(uint32_t block_tokens = 16, uint64_t seed = 0);

  void reset() override;
  void text(std::string_view text) override;

  std::span<const uint64_t> blocks() const { return blocks_; }
  uint32_t blockTokens() const { return block_tokens_; }
  size_t blockBytes() const { return block_bytes_; }

 private:
  void push(const char* data);

  uint32_t block_tokens_;
  size_t block_bytes_;
  uint64_t seed_;
  uint64_t chain_;
  size_t partial_ = 0;  // bytes of the current block in buffer_
  std::array<char, kMaxBlockTokens * kBytesPerToken> buffer_{};
  std::vector<uint64_t> blocks_;
};

// One link of the chain: the hash of a block given the previous block's hash (`seed` for the
// first). The engine emulator hashes its prompt blocks with this too, so the hashes it publishes
// in its KV events are exactly the ones the gateway computes (docs/routing.md).
uint64_t chainBlockHash(uint64_t previous, std::string_view block);

// The chain of block hashes of one text, with a fresh hasher (tests, benchmarks, the emulator).
std::vector<uint64_t> hashPromptBlocks(std::string_view text, uint32_t block_tokens,
                                       uint64_t seed = 0);

}  // namespace switchyard::fleet::kv_index
