// Resources that live on one replica, as on vLLM/OpenAI-compatible servers: background
// responses (/v1/responses), batches (/v1/batches) and files (/v1/files). A client that creates
// one must come back to the same replica to read it, which is what the gateway's ownership
// routing has to get right; the emulator only needs to hold them and answer truthfully.
//
// Pure: no networking, no clock reads (time is passed in), so the routes are unit-tested without
// sockets. Jobs complete lazily: a status is computed from the time it is asked, so there are no
// timers. State is bounded: each kind keeps at most `max_items`, dropping the oldest. Ids carry
// a tag derived from the replica's identity (its listen address) and a per-replica sequence, so
// they are unique per replica and another replica cannot accidentally own one.
//
// Not thread-safe: the replica's io_context thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "core/clock.h"

namespace switchyard::engine {

struct AsyncJobOptions {
  std::string model;             // reported in responses
  std::string replica_identity;  // e.g. "127.0.0.1:9001": hashed into every id
  uint64_t seed = 1;             // output text
  size_t max_items = 1024;       // per kind (responses, batches, files)
  size_t max_file_bytes_total = 64u << 20;
  // The simple generation-time estimate for background responses.
  TimeNs per_output_token = 20 * kNsPerMs;
  TimeNs per_prompt_token = 200'000;         // 0.2 ms
  TimeNs batch_validating = 200 * kNsPerMs;  // validating -> in_progress
  TimeNs batch_duration = 2 * kNsPerSec;     // in_progress -> completed
};

struct JobReply {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class AsyncJobs {
 public:
  explicit AsyncJobs(AsyncJobOptions options);

  // True when `path` is one of this store's routes (/v1/responses, /v1/batches, /v1/files...).
  static bool handles(std::string_view path);

  // Serves one request. `now` is monotonic (job progress); `unix_seconds` goes into created_at.
  JobReply handle(std::string_view method, std::string_view path, std::string_view body, TimeNs now,
                  int64_t unix_seconds);

 private:
  struct Response {
    int64_t created_at = 0;
    TimeNs done_at = 0;
    bool background = false;
    int input_tokens = 0;
    int output_tokens = 0;
    uint64_t text_seed = 0;
  };
  struct Batch {
    int64_t created_at = 0;
    TimeNs started = 0;
    TimeNs cancelled_at = -1;
    std::string input_file_id, endpoint, completion_window;
  };
  struct File {
    int64_t created_at = 0;
    std::string filename, purpose, bytes;
  };
  // A map with a cap on its size: inserting beyond it drops the oldest entry.
  template <typename T>
  struct Bounded {
    std::map<std::string, T, std::less<>> items;
    std::deque<std::string> order;
  };

  JobReply createResponse(std::string_view body, TimeNs now, int64_t unix_seconds);
  JobReply createBatch(std::string_view body, TimeNs now, int64_t unix_seconds);
  JobReply cancelBatch(std::string_view id, TimeNs now);
  JobReply createFile(std::string_view body, int64_t unix_seconds);
  std::string renderResponse(std::string_view id, const Response& r, TimeNs now) const;
  std::string renderBatch(std::string_view id, const Batch& b, TimeNs now) const;
  std::string renderFile(std::string_view id, const File& f) const;
  std::string newId(std::string_view prefix);
  template <typename T>
  T& insert(Bounded<T>& map, const std::string& id, T value);
  void dropFileBytesOverCap();

  AsyncJobOptions options_;
  uint32_t tag_ = 0;
  uint64_t sequence_ = 0;
  Bounded<Response> responses_;
  Bounded<Batch> batches_;
  Bounded<File> files_;
  size_t file_bytes_ = 0;
};

}  // namespace switchyard::engine
