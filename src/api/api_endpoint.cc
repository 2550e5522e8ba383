#include "api/api_endpoint.h"

#include <algorithm>

namespace switchyard::api {

ApiEndpoint classifyEndpoint(std::string_view path) {
  if (path == "/v1/chat/completions") return ApiEndpoint::kChatCompletions;
  if (path == "/v1/completions") return ApiEndpoint::kCompletions;
  if (path == "/v1/embeddings") return ApiEndpoint::kEmbeddings;
  if (path == "/v1/rerank") return ApiEndpoint::kRerank;
  if (path == "/v1/score") return ApiEndpoint::kScore;
  if (path == "/v1/audio/transcriptions") return ApiEndpoint::kAudioTranscriptions;
  if (path == "/v1/audio/translations") return ApiEndpoint::kAudioTranslations;
  if (path == "/v1/images/generations") return ApiEndpoint::kImagesGenerations;
  return ApiEndpoint::kNone;
}

int64_t workUnits(ApiEndpoint endpoint, const InspectedRequest& info, uint64_t file_bytes) {
  switch (endpoint) {
    case ApiEndpoint::kRerank:
      return std::max<int64_t>(info.documents, 1);
    case ApiEndpoint::kScore:
      // One text_1 against every text_2, or two lists paired up: one pair per text_2.
      return std::max<int64_t>({info.text_1, info.text_2, 1});
    case ApiEndpoint::kImagesGenerations:
      return std::max<int64_t>(info.n, 1);
    case ApiEndpoint::kAudioTranscriptions:
    case ApiEndpoint::kAudioTranslations:
      return std::max<int64_t>(
          static_cast<int64_t>((file_bytes + kAudioBytesPerUnit - 1) / kAudioBytesPerUnit), 1);
    default:
      return 1;
  }
}

}  // namespace switchyard::api
