#include "api/request_body.h"

namespace switchyard::api {
namespace {

bool isFormContentType(std::string_view content_type) {
  static constexpr std::string_view kForm = "multipart/form-data";
  while (!content_type.empty() && (content_type.front() == ' ' || content_type.front() == '\t')) {
    content_type.remove_prefix(1);
  }
  if (content_type.size() < kForm.size()) return false;
  for (size_t i = 0; i < kForm.size(); ++i) {
    char c = content_type[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kForm[i]) return false;
  }
  return true;
}

}  // namespace

BodyReading readRequestBody(ApiEndpoint endpoint, bool forms_allowed,
                            std::string_view content_type, std::string& body,
                            RequestInspector& inspector, MultipartReader& multipart) {
  BodyReading out;
  if (takesMultipart(endpoint) || (forms_allowed && isFormContentType(content_type))) {
    out.multipart = true;
    MultipartError error = multipart.start(content_type);
    if (error == MultipartError::kNone) {
      multipart.feed(body);
      error = multipart.finish();
    }
    if (error != MultipartError::kNone) {
      out.error = InspectError::kMalformedJson;  // "unreadable", whatever the format
      out.status = error == MultipartError::kNotMultipart ? 415 : 400;
      out.code = error == MultipartError::kNotMultipart ? "unsupported_media_type"
                                                        : "invalid_multipart";
      out.message = multipartErrorMessage(error);
      if (error == MultipartError::kFieldTooLong) out.param = "model";
      return out;
    }
    out.info.model = multipart.model();
    if (out.info.model.empty()) {
      out.error = InspectError::kMissingModel;
      out.status = 400;
      out.message = "you must provide a model parameter";
      out.param = "model";
      return out;
    }
    out.work_units = workUnits(endpoint, out.info, multipart.fileBytes());
    return out;
  }
  body.reserve(body.size() + RequestInspector::kRequiredPadding);
  out.error = inspector.inspect(body.data(), body.size(), body.capacity(), out.info);
  if (out.error != InspectError::kNone) {
    out.status = 400;
    out.message = inspector.errorMessage();
    out.param = out.error == InspectError::kMissingModel ? "model" : "";
    return out;
  }
  out.work_units = workUnits(endpoint, out.info, 0);
  return out;
}

}  // namespace switchyard::api
