#include "engine/video_jobs.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <functional>

#include "engine/openai_emulation.h"

namespace switchyard::engine {
namespace {

JobReply failure(unsigned status, std::string_view message,
                 std::string_view type = "invalid_request_error") {
  return {status, "application/json", renderError(message, type)};
}

// A minimal MP4 header (an ftyp box) and padding: the emulator models time, not pictures.
std::string fakeMp4(std::string_view id) {
  std::string out("\0\0\0\x18" "ftypmp42\0\0\0\0mp42isom", 24);
  out += "\0\0\0\x08" "free";
  out.resize(out.size() + 1024, '\0');
  out.append(id);
  return out;
}

bool parseSize(std::string_view size, int64_t& width, int64_t& height) {
  const size_t x = size.find('x');
  if (x == std::string_view::npos) return false;
  auto [p1, e1] = std::from_chars(size.data(), size.data() + x, width);
  auto [p2, e2] = std::from_chars(size.data() + x + 1, size.data() + size.size(), height);
  return e1 == std::errc() && e2 == std::errc() && p1 == size.data() + x &&
         p2 == size.data() + size.size() && width >= 64 && height >= 64 && width <= 4096 &&
         height <= 4096;
}

}  // namespace

VideoJobs::VideoJobs(VideoJobOptions options)
    : options_(std::move(options)),
      tag_(static_cast<uint32_t>(std::hash<std::string>{}(options_.replica_identity))) {}

bool VideoJobs::handles(std::string_view path) {
  static constexpr std::string_view kRoot = "/v1/videos";
  return path == kRoot || (path.starts_with(kRoot) && path[kRoot.size()] == '/');
}

JobReply VideoJobs::handle(std::string_view method, std::string_view path,
                           std::string_view content_type, std::string_view body, TimeNs now,
                           int64_t unix_seconds) {
  std::string_view rest = path.substr(std::string_view("/v1/videos").size());
  if (!rest.empty()) rest.remove_prefix(1);
  const std::string_view id = rest.substr(0, rest.find('/'));
  const std::string_view action =
      id.size() < rest.size() ? rest.substr(id.size() + 1) : std::string_view();
  auto methodError = [&] {
    return failure(405, fmt::format("Method {} not allowed for {}", method, path));
  };
  if (id.empty()) {
    if (method == "POST") return create(content_type, body, now, unix_seconds);
    if (method != "GET") return methodError();
    std::string out = R"({"object":"list","data":[)";
    bool first = true;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (!first) out += ',';
      first = false;
      out += render(*it, videos_.find(*it)->second, now);
    }
    out += R"(],"has_more":false})";
    return {200, "application/json", std::move(out)};
  }
  auto it = videos_.find(id);
  if (it == videos_.end()) {
    return failure(404, fmt::format("No such video: '{}' (it may live on another replica)", id),
                   "NotFoundError");
  }
  if (method == "DELETE" && action.empty()) {
    std::string reply =
        fmt::format(R"({{"id":"{}","object":"video.deleted","deleted":true}})", it->first);
    order_.erase(std::find(order_.begin(), order_.end(), it->first));
    videos_.erase(it);
    return {200, "application/json", std::move(reply)};
  }
  if (method != "GET") return methodError();
  const Video& v = it->second;
  if (action.empty()) return {200, "application/json", render(id, v, now)};
  if (action != "content") return methodError();
  if (now < v.created + options_.queued + v.duration) {
    return failure(400, fmt::format("Video '{}' is not completed yet", id));
  }
  return {200, "video/mp4", fakeMp4(id)};
}

JobReply VideoJobs::create(std::string_view content_type, std::string_view body, TimeNs now,
                           int64_t unix_seconds) {
  std::string model, prompt, seconds_text, size = "720x1280";
  int64_t seconds = 4;
  const bool form = form_.start(content_type) != api::MultipartError::kNotMultipart;
  if (form) {
    form_.feed(body);
    if (const api::MultipartError e = form_.finish(); e != api::MultipartError::kNone) {
      return failure(400, api::multipartErrorMessage(e));
    }
    model = form_.model();
    prompt = form_.field("prompt");
    seconds_text = form_.field("seconds");
    if (!form_.field("size").empty()) size = form_.field("size");
  } else {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(body.data(), body.size()).get(root) || !root.is_object()) {
      return failure(400, "the body must be a JSON object or a multipart/form-data form");
    }
    std::string_view text;
    if (root["model"].get_string().get(text) == simdjson::SUCCESS) model = text;
    if (root["prompt"].get_string().get(text) == simdjson::SUCCESS) prompt = text;
    if (root["size"].get_string().get(text) == simdjson::SUCCESS) size = text;
    int64_t number = 0;
    if (root["seconds"].get_string().get(text) == simdjson::SUCCESS) {
      seconds_text = text;
    } else if (root["seconds"].get_int64().get(number) == simdjson::SUCCESS) {
      seconds_text = std::to_string(number);
    }
  }
  if (!model.empty() && model != options_.model) {
    return failure(404, fmt::format("The model `{}` does not exist.", model), "NotFoundError");
  }
  if (prompt.empty()) return failure(400, "'prompt' is required");
  if (!seconds_text.empty()) {
    auto [p, e] = std::from_chars(seconds_text.data(), seconds_text.data() + seconds_text.size(),
                                  seconds);
    if (e != std::errc() || p != seconds_text.data() + seconds_text.size() || seconds < 1 ||
        seconds > 60) {
      return failure(400, "'seconds' must be a whole number of seconds from 1 to 60");
    }
  }
  int64_t width = 0, height = 0;
  if (!parseSize(size, width, height)) return failure(400, "'size' must be WIDTHxHEIGHT");
  Video v;
  v.model = options_.model;
  v.size = size;
  v.seconds = static_cast<int>(seconds);
  v.created_at = unix_seconds;
  v.created = now;
  v.duration = static_cast<TimeNs>(static_cast<double>(options_.per_second * seconds) *
                                   static_cast<double>(width * height) / (1280.0 * 720.0));
  const std::string id = fmt::format("video_{:08x}{:012x}", tag_, ++sequence_);
  while (videos_.size() >= options_.max_items && !order_.empty()) {
    videos_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(id);
  const Video& stored = videos_.emplace(id, std::move(v)).first->second;
  return {200, "application/json", render(id, stored, now)};
}

std::string VideoJobs::render(std::string_view id, const Video& v, TimeNs now) const {
  const TimeNs started = v.created + options_.queued;
  const TimeNs done = started + v.duration;
  std::string_view status = "queued";
  int progress = 0;
  if (now >= done) {
    status = "completed";
    progress = 100;
  } else if (now >= started) {
    status = "in_progress";
    progress = v.duration > 0 ? static_cast<int>(100 * (now - started) / v.duration) : 0;
  }
  const int64_t completed_at = v.created_at + (done - v.created + kNsPerSec - 1) / kNsPerSec;
  return fmt::format(
      R"({{"id":"{}","object":"video","model":"{}","status":"{}","progress":{},)"
      R"("created_at":{},"completed_at":{},"expires_at":{},"seconds":"{}","size":"{}",)"
      R"("quality":"standard","remixed_from_video_id":null,"error":null}})",
      id, jsonEscape(v.model), status, progress, v.created_at,
      status == "completed" ? std::to_string(completed_at) : "null",
      status == "completed" ? std::to_string(completed_at + 3600) : "null", v.seconds,
      jsonEscape(v.size));
}

}  // namespace switchyard::engine
