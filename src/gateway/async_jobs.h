// Async job routing: resources that live on one replica (background responses, batches, files,
// videos) are created through any gateway and must be followed up on the replica that owns them.
// Pure helpers used by the worker: which requests create or name such a resource, and the id a
// creation response carries.
#pragma once

#include <string_view>

namespace switchyard::gateway {

enum class JobRequest : unsigned char {
  kNone,      // not an async-job endpoint
  kCreate,    // POST /v1/responses, /v1/batches, /v1/files, /v1/videos: names a new resource
  kFollowUp,  // /v1/<collection>/{id}…: goes to the replica that owns it
  kList,      // GET /v1/batches, /v1/files, /v1/videos: listing (one replica; not followed)
};

struct JobPath {
  JobRequest kind = JobRequest::kNone;
  std::string_view collection;  // "responses", "batches", "files" or "videos"
  std::string_view id;          // kFollowUp: the resource id from the path
};

// `path` without the query string; `is_post` for the method.
JobPath classifyJobPath(std::string_view path, bool is_post);

// The first `"id": "<value>"` member in a response's first bytes, for a JSON object or the
// first event of an event stream ({"type":"response.created","response":{"id":…}}). Empty if
// none is found in `prefix` or the value is not a plain id (only [A-Za-z0-9_.:-], ≤ 200 bytes).
std::string_view findResourceId(std::string_view prefix);

}  // namespace switchyard::gateway
