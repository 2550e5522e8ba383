// Emulated video generation, shaped like OpenAI's videos API: POST /v1/videos creates a job
// (JSON or multipart/form-data: model, prompt, seconds, size), GET /v1/videos/{id} polls it
// (queued → in_progress with progress → completed), GET /v1/videos/{id}/content returns the
// video (video/mp4) once completed, GET /v1/videos lists, DELETE /v1/videos/{id} deletes. A video
// lives on the replica that created it: the gateway's job-owner routing must bring polls back.
//
// Cost model (docs/endpoints.md): queued for `queued`, then generating for per_second × seconds ×
// (width × height ÷ 1280 × 720). Pure like AsyncJobs (time passed in; progress computed when
// asked; at most max_items videos, oldest dropped). Not thread-safe: the replica's thread owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "api/multipart_reader.h"
#include "core/clock.h"
#include "engine/async_jobs.h"

namespace switchyard::engine {

struct VideoJobOptions {
  std::string model;
  std::string replica_identity;  // hashed into every id
  size_t max_items = 256;
  TimeNs queued = 100 * kNsPerMs;
  TimeNs per_second = 250 * kNsPerMs;  // of 1280×720 video
};

class VideoJobs {
 public:
  explicit VideoJobs(VideoJobOptions options);

  static bool handles(std::string_view path);  // /v1/videos and below

  JobReply handle(std::string_view method, std::string_view path, std::string_view content_type,
                  std::string_view body, TimeNs now, int64_t unix_seconds);

 private:
  struct Video {
    std::string model, size;
    int seconds = 4;
    int64_t created_at = 0;
    TimeNs created = 0;
    TimeNs duration = 0;  // generation, after the queued time
  };
  JobReply create(std::string_view content_type, std::string_view body, TimeNs now,
                  int64_t unix_seconds);
  std::string render(std::string_view id, const Video& v, TimeNs now) const;

  VideoJobOptions options_;
  uint32_t tag_ = 0;
  uint64_t sequence_ = 0;
  std::map<std::string, Video, std::less<>> videos_;
  std::deque<std::string> order_;
  api::MultipartReader form_;
};

}  // namespace switchyard::engine
