// Reading a request body for routing: JSON bodies through the RequestInspector, multipart/form-data
// bodies (audio uploads; async-job creations sent as forms) through the streaming
// MultipartReader, so the model is found either way and the body is forwarded untouched.
//
// Errors are values with the status and OpenAI error code the client gets (docs/endpoints.md):
//   415 unsupported_media_type  an audio endpoint without a multipart/form-data Content-Type
//   400 invalid_multipart       no or a bad boundary, a boundary never closed, a malformed part
//   400 (code null, param model) no model field (JSON or form)
//   400                          malformed JSON or an invalid field (the inspector's message)
// Same threading and cost as the two readers it drives (one of each per worker, no allocation).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "api/api_endpoint.h"
#include "api/multipart_reader.h"
#include "api/request_inspector.h"

namespace switchyard::api {

struct BodyReading {
  InspectedRequest info;  // info.model points into the body or into the MultipartReader
  InspectError error = InspectError::kNone;  // kMissingModel also for a form without one
  unsigned status = 0;                        // 0 when readable; else the answer's status
  std::string_view message;                   // valid until the readers' next use
  std::string_view code;                      // OpenAI error code ("" → null)
  std::string_view param;                     // "" → null
  bool multipart = false;                     // read as multipart/form-data
  int64_t work_units = 1;                     // see workUnits()
};

// `body` gets the inspector's padding reserved (see RequestInspector). A multipart/form-data
// Content-Type is read as a form for multipart endpoints and, when `forms_allowed`, for the
// others (async-job creations); JSON endpoints keep reading JSON whatever the header says.
BodyReading readRequestBody(ApiEndpoint endpoint, bool forms_allowed,
                            std::string_view content_type, std::string& body,
                            RequestInspector& inspector, MultipartReader& multipart);

}  // namespace switchyard::api
