// Request-shape buckets of the load monitor: log2 buckets of tokens with four linear
// sub-buckets per octave (HDR-histogram style: the octave from the top bit, the sub-bucket from
// the next two), so a cell's representative size is within 12.5 % of every request in it.
// Tokens 1…3 have a bucket each; anything above the last octave shares the top bucket.
//
//   bucket(t) = t                                   for t < 4
//             = 4·floor(log2 t) + ((t >> (floor(log2 t) − 2)) & 3)   otherwise
//   representative(b) = the middle of the bucket's token range
//
// Pure, constexpr-friendly, no allocation: the gateway's hot path computes a bucket per request.
#pragma once

#include <bit>
#include <cstdint>

namespace switchyard::observe {

inline constexpr int kPromptOctaves = 17;  // prompts up to 2^17 (128k) tokens
inline constexpr int kOutputOctaves = 15;  // outputs up to 2^15 (32k) tokens
inline constexpr int kPromptBuckets = 4 * kPromptOctaves;
inline constexpr int kOutputBuckets = 4 * kOutputOctaves;
inline constexpr int kShapeCells = kPromptBuckets * kOutputBuckets;

inline int tokenBucket(int64_t tokens, int buckets) {
  if (tokens < 1) tokens = 1;
  if (tokens < 4) return static_cast<int>(tokens);
  const int octave = 63 - std::countl_zero(static_cast<uint64_t>(tokens));
  const int b = 4 * octave + static_cast<int>((tokens >> (octave - 2)) & 3);
  return b < buckets ? b : buckets - 1;
}

// Whether tokenBucket() can return `b`: buckets 4…7 do not exist (octaves start at 2, 4 tokens).
inline constexpr bool tokenBucketExists(int64_t b, int buckets) {
  return b >= 0 && b < buckets && (b < 4 || b >= 8);
}

// The middle of bucket `b`'s range of token counts (`b` one that exists).
inline double bucketTokens(int b) {
  if (b < 4) return b < 1 ? 1.0 : static_cast<double>(b);
  const int octave = b / 4;
  const int sub = b % 4;
  const double width = static_cast<double>(int64_t{1} << (octave - 2));
  return (4 + sub) * width + (width - 1) / 2.0;
}

inline int shapeCell(int64_t prompt_tokens, int64_t output_tokens) {
  return tokenBucket(prompt_tokens, kPromptBuckets) * kOutputBuckets +
         tokenBucket(output_tokens, kOutputBuckets);
}

}  // namespace switchyard::observe
