// RequestInspector: reads the few fields the gateway routes on from an OpenAI request body.
//
// One pass with simdjson On-Demand over the client's body, in place: the caller reserves
// kRequiredPadding readable bytes after the body (no copy), otherwise the inspector copies into
// an internal padded buffer. The whole body is validated as JSON (lazy parsing alone would let
// trailing garbage or a skipped malformed value through), so the gateway never forwards a body
// the engine would reject as unparsable.
//
// One inspector per worker thread; not thread-safe. Views in InspectedRequest point into the
// caller's body or into inspector-owned storage and are valid until the next inspect() call and
// while the body lives. Steady-state cost: no allocation per call once the parser has grown to
// the largest body seen. Never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace switchyard::api {

struct InspectedRequest {
  std::string_view model;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string_view user;       // empty when absent or null
  // max_completion_tokens, preferred over the older max_tokens wherever it appears; -1 absent.
  int64_t max_tokens = -1;
  // Bytes of prompt text (after unescaping): the `prompt` string(s), the string content of every
  // messages[].content (text parts of content arrays included), or `input` for embeddings.
  // Token-id prompts count kBytesPerPromptToken per id. An estimate for cost prediction.
  size_t prompt_bytes = 0;
  // Work items the body names, for endpoints whose cost grows with them; -1 when absent.
  // `documents` (rerank): array length (1 for a string); `text_1`/`text_2` (score) likewise; `n`
  // (images, choices). Read leniently: a value of another type is left to the engine to refuse.
  // Their string text (and `query`'s) counts in prompt_bytes.
  int64_t documents = -1;
  int64_t text_1 = -1;
  int64_t text_2 = -1;
  int64_t n = -1;
};

// Receives the prompt's text while the body is parsed, in order: each messages[].content string
// (and each text part), or each `prompt` string. reset() is called at the start of every
// inspect(). Views are valid only during the call. Used by prefix-cache routing.
class PromptTextSink {
 public:
  virtual void reset() = 0;
  virtual void text(std::string_view text) = 0;

 protected:
  ~PromptTextSink() = default;
};

enum class InspectError {
  kNone,
  kMalformedJson,  // not JSON, not an object, truncated, trailing content, nested too deep
  kMissingModel,   // no "model" field, or an empty one
  kInvalidField,   // a known field has the wrong type or range; errorMessage() names it
};

class RequestInspector {
 public:
  // Bytes that must be readable after the body for the zero-copy path (simdjson's padding).
  static constexpr size_t kRequiredPadding = 64;
  // Nesting deeper than this is rejected as kMalformedJson (bounds stack use on hostile input).
  static constexpr int kMaxDepth = 64;
  // Rough bytes-of-text per token for prompts given as token ids.
  static constexpr size_t kBytesPerPromptToken = 4;

  RequestInspector();
  ~RequestInspector();
  RequestInspector(const RequestInspector&) = delete;
  RequestInspector& operator=(const RequestInspector&) = delete;

  // Inspects `size` bytes at `data`; `capacity` is how many bytes from `data` are readable
  // (copy-free when capacity >= size + kRequiredPadding). `out` is reset first. When an error is
  // returned, fields of `out` may be partially filled and must not be used.
  InspectError inspect(const char* data, size_t size, size_t capacity, InspectedRequest& out);

  // Where the prompt text goes while a body is inspected (nullptr: nowhere). Not owned.
  void setPromptSink(PromptTextSink* sink);

  // Human-readable reason for the last error, suitable for an OpenAI error envelope. Empty after
  // a successful inspect().
  std::string_view errorMessage() const;
  // For kInvalidField: the offending top-level field ("stream", "messages", ...); else empty.
  std::string_view errorParam() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;  // keeps simdjson.h out of every includer
};

}  // namespace switchyard::api
