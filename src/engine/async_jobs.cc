#include "engine/async_jobs.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <functional>

#include "engine/openai_emulation.h"

namespace switchyard::engine {
namespace {

namespace od = simdjson::ondemand;

JobReply error(unsigned status, std::string_view message,
               std::string_view type = "invalid_request_error") {
  return {status, "application/json", renderError(message, type)};
}

JobReply notFound(std::string_view kind, std::string_view id) {
  return error(404, fmt::format("No such {}: '{}' (it may live on another replica)", kind, id),
               "NotFoundError");
}

// What the create calls read from a JSON body; absent fields stay empty / at their default.
struct Fields {
  std::string model, input_file_id, endpoint, completion_window;
  size_t input_chars = 0;
  uint64_t input_hash = 0;
  bool background = false;
  int64_t max_output_tokens = 16;
};

// Parses with a padded copy: job creation is rare, so the copy is simpler than reserving
// padding in the server's body buffer.
std::string parseFields(std::string_view body, Fields& out) {
  od::parser parser;
  simdjson::padded_string padded(body);
  od::document doc;
  od::object object;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(object)) {
    return "the body must be a JSON object";
  }
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return "invalid JSON body";
    od::value value;
    if (field.value().get(value)) return "invalid JSON body";
    std::string_view text;
    if (key == "input") {
      // A string prompt, or an array of input items: their JSON text sizes the prompt.
      std::string_view raw;
      od::json_type type;
      if (value.type().get(type)) return "invalid JSON body";
      od::array items;
      bool bad = true;
      if (type == od::json_type::string) {
        bad = value.get_string().get(raw) != simdjson::SUCCESS;
      } else if (type == od::json_type::array) {
        bad = value.get_array().get(items) != simdjson::SUCCESS ||
              items.raw_json().get(raw) != simdjson::SUCCESS;
      }
      if (bad) return "'input' must be a string or an array";
      out.input_chars = raw.size();
      out.input_hash = std::hash<std::string_view>{}(raw);
      continue;
    }
    if (key == "background") {
      if (value.get_bool().get(out.background)) return "'background' must be a boolean";
      continue;
    }
    if (key == "max_output_tokens") {
      if (value.get_int64().get(out.max_output_tokens) || out.max_output_tokens < 1 ||
          out.max_output_tokens > kMaxModelLen) {
        return "'max_output_tokens' must be a positive integer";
      }
      continue;
    }
    std::string* target = key == "model"               ? &out.model
                          : key == "input_file_id"     ? &out.input_file_id
                          : key == "endpoint"          ? &out.endpoint
                          : key == "completion_window" ? &out.completion_window
                                                       : nullptr;
    if (target == nullptr) continue;  // other OpenAI fields are accepted and ignored
    if (value.get_string().get(text)) return fmt::format("'{}' must be a string", key);
    target->assign(text);
  }
  return {};
}

// The value of a multipart form field (`name="purpose"`), or of the filename attribute; empty
// when absent. Enough for the emulator: the file's bytes are kept whole, not split into parts.
std::string multipartValue(std::string_view body, std::string_view name) {
  const std::string marker = fmt::format("name=\"{}\"", name);
  size_t at = body.find(marker);
  if (at == std::string_view::npos) return {};
  at = body.find("\r\n\r\n", at);
  if (at == std::string_view::npos) return {};
  at += 4;
  return std::string(body.substr(at, body.find("\r\n", at) - at));
}

std::string multipartFilename(std::string_view body) {
  constexpr std::string_view kMarker = "filename=\"";
  const size_t at = body.find(kMarker);
  if (at == std::string_view::npos) return "upload";
  const size_t start = at + kMarker.size();
  return std::string(body.substr(start, body.find('"', start) - start));
}

}  // namespace

AsyncJobs::AsyncJobs(AsyncJobOptions options)
    : options_(std::move(options)),
      tag_(static_cast<uint32_t>(std::hash<std::string>{}(options_.replica_identity))) {}

bool AsyncJobs::handles(std::string_view path) {
  for (std::string_view root : {"/v1/responses", "/v1/batches", "/v1/files"}) {
    if (path == root || (path.starts_with(root) && path[root.size()] == '/')) return true;
  }
  return false;
}

std::string AsyncJobs::newId(std::string_view prefix) {
  return fmt::format("{}{:08x}{:012x}", prefix, tag_, ++sequence_);
}

template <typename T>
T& AsyncJobs::insert(Bounded<T>& map, const std::string& id, T value) {
  while (map.items.size() >= options_.max_items && !map.order.empty()) {
    auto oldest = map.items.find(map.order.front());
    if constexpr (std::is_same_v<T, File>) file_bytes_ -= oldest->second.bytes.size();
    map.items.erase(oldest);
    map.order.pop_front();
  }
  map.order.push_back(id);
  return map.items.emplace(id, std::move(value)).first->second;
}

JobReply AsyncJobs::handle(std::string_view method, std::string_view path, std::string_view body,
                           TimeNs now, int64_t unix_seconds) {
  const bool get = method == "GET";
  const bool post = method == "POST";
  // Split "/v1/<kind>[/<id>[/<action>]]".
  std::string_view rest = path.substr(4);
  const std::string_view kind = rest.substr(0, rest.find('/'));
  rest.remove_prefix(std::min(rest.size(), kind.size() + 1));
  const std::string_view id = rest.substr(0, rest.find('/'));
  rest.remove_prefix(std::min(rest.size(), id.size() + 1));
  const std::string_view action = rest;
  auto methodError = [&] {
    return error(405, fmt::format("Method {} not allowed for {}", method, path));
  };

  if (kind == "responses") {
    if (id.empty()) return post ? createResponse(body, now, unix_seconds) : methodError();
    if (!get || !action.empty()) return methodError();
    auto it = responses_.items.find(id);
    if (it == responses_.items.end()) return notFound("response", id);
    return {200, "application/json", renderResponse(id, it->second, now)};
  }
  if (kind == "batches") {
    if (id.empty()) return post ? createBatch(body, now, unix_seconds) : methodError();
    if (action == "cancel") return post ? cancelBatch(id, now) : methodError();
    if (!get || !action.empty()) return methodError();
    auto it = batches_.items.find(id);
    if (it == batches_.items.end()) return notFound("batch", id);
    return {200, "application/json", renderBatch(id, it->second, now)};
  }
  // files
  if (id.empty()) return post ? createFile(body, unix_seconds) : methodError();
  if (!get || (!action.empty() && action != "content")) return methodError();
  auto it = files_.items.find(id);
  if (it == files_.items.end()) return notFound("file", id);
  if (action == "content") return {200, "application/octet-stream", it->second.bytes};
  return {200, "application/json", renderFile(id, it->second)};
}

JobReply AsyncJobs::createResponse(std::string_view body, TimeNs now, int64_t unix_seconds) {
  Fields f;
  if (std::string problem = parseFields(body, f); !problem.empty()) return error(400, problem);
  if (!f.model.empty() && f.model != options_.model) {
    return error(404, fmt::format("The model `{}` does not exist.", f.model), "NotFoundError");
  }
  if (f.input_chars == 0) return error(400, "'input' is required");
  Response r;
  r.created_at = unix_seconds;
  r.background = f.background;
  r.input_tokens = estimateTokens(f.input_chars);
  r.output_tokens = static_cast<int>(f.max_output_tokens);
  r.text_seed = f.input_hash;
  // The simple estimate: prefill, then one decode step per output token. A non-background
  // response is answered at once, already completed.
  r.done_at = f.background ? now + r.input_tokens * options_.per_prompt_token +
                                 r.output_tokens * options_.per_output_token
                           : now;
  const std::string id = newId("resp_");
  const Response& stored = insert(responses_, id, r);
  return {200, "application/json", renderResponse(id, stored, now)};
}

std::string AsyncJobs::renderResponse(std::string_view id, const Response& r, TimeNs now) const {
  const bool done = now >= r.done_at;
  std::string out = fmt::format(
      R"({{"id":"{}","object":"response","created_at":{},"status":"{}","background":{},)"
      R"("model":"{}","output":[)",
      id, r.created_at, done ? "completed" : "queued", r.background, jsonEscape(options_.model));
  if (done) {
    TokenTextSource words(options_.seed, r.text_seed);
    std::string text;
    for (int i = 0; i < r.output_tokens; ++i) text.append(words.next());
    fmt::format_to(std::back_inserter(out),
                   R"({{"type":"message","id":"msg_{}","status":"completed","role":"assistant",)"
                   R"("content":[{{"type":"output_text","text":"{}","annotations":[]}}]}}],)"
                   R"("usage":{{"input_tokens":{},"output_tokens":{},"total_tokens":{}}}}})",
                   id.substr(5), jsonEscape(text), r.input_tokens, r.output_tokens,
                   r.input_tokens + r.output_tokens);
  } else {
    out.append(R"(],"usage":null})");
  }
  return out;
}

JobReply AsyncJobs::createBatch(std::string_view body, TimeNs now, int64_t unix_seconds) {
  Fields f;
  if (std::string problem = parseFields(body, f); !problem.empty()) return error(400, problem);
  for (const auto& [name, value] :
       {std::pair{"input_file_id", &f.input_file_id}, std::pair{"endpoint", &f.endpoint},
        std::pair{"completion_window", &f.completion_window}}) {
    if (value->empty()) return error(400, fmt::format("'{}' is required", name));
  }
  // The input file must live here: a batch created on another replica than its file is the
  // ownership mistake this emulation exists to expose.
  if (!files_.items.contains(f.input_file_id)) return notFound("file", f.input_file_id);
  Batch b{unix_seconds, now, -1, f.input_file_id, f.endpoint, f.completion_window};
  const std::string id = newId("batch_");
  const Batch& stored = insert(batches_, id, std::move(b));
  return {200, "application/json", renderBatch(id, stored, now)};
}

JobReply AsyncJobs::cancelBatch(std::string_view id, TimeNs now) {
  auto it = batches_.items.find(id);
  if (it == batches_.items.end()) return notFound("batch", id);
  Batch& b = it->second;
  const TimeNs finishes = b.started + options_.batch_validating + options_.batch_duration;
  if (b.cancelled_at < 0 && now >= finishes) {
    return error(409, fmt::format("Cannot cancel batch '{}': it has already completed", id));
  }
  if (b.cancelled_at < 0) b.cancelled_at = now;
  return {200, "application/json", renderBatch(id, b, now)};
}

std::string AsyncJobs::renderBatch(std::string_view id, const Batch& b, TimeNs now) const {
  const TimeNs in_progress_at = b.started + options_.batch_validating;
  const TimeNs completes_at = in_progress_at + options_.batch_duration;
  std::string_view status = now < in_progress_at ? "validating"
                            : now < completes_at ? "in_progress"
                                                 : "completed";
  if (b.cancelled_at >= 0) status = "cancelled";
  const bool completed = status == "completed";
  return fmt::format(
      R"({{"id":"{}","object":"batch","endpoint":"{}","input_file_id":"{}",)"
      R"("completion_window":"{}","status":"{}","output_file_id":{},"error_file_id":null,)"
      R"("created_at":{},"request_counts":{{"total":0,"completed":0,"failed":0}},)"
      R"("metadata":null}})",
      id, jsonEscape(b.endpoint), jsonEscape(b.input_file_id), jsonEscape(b.completion_window),
      status, completed ? fmt::format(R"("{}")", jsonEscape(b.input_file_id)) : "null",
      b.created_at);
}

JobReply AsyncJobs::createFile(std::string_view body, int64_t unix_seconds) {
  if (body.size() > options_.max_file_bytes_total) return error(413, "file too large");
  File f;
  f.created_at = unix_seconds;
  f.filename = multipartFilename(body);
  f.purpose = multipartValue(body, "purpose");
  if (f.purpose.empty()) f.purpose = "batch";
  f.bytes.assign(body);
  file_bytes_ += f.bytes.size();
  const std::string id = newId("file-");
  const File& stored = insert(files_, id, std::move(f));
  std::string reply = renderFile(id, stored);
  dropFileBytesOverCap();  // after rendering: the new file itself always fits (checked above)
  return {200, "application/json", std::move(reply)};
}

void AsyncJobs::dropFileBytesOverCap() {
  while (file_bytes_ > options_.max_file_bytes_total && files_.order.size() > 1) {
    auto oldest = files_.items.find(files_.order.front());
    file_bytes_ -= oldest->second.bytes.size();
    files_.items.erase(oldest);
    files_.order.pop_front();
  }
}

std::string AsyncJobs::renderFile(std::string_view id, const File& f) const {
  return fmt::format(R"({{"id":"{}","object":"file","bytes":{},"created_at":{},"filename":"{}",)"
                     R"("purpose":"{}"}})",
                     id, f.bytes.size(), f.created_at, jsonEscape(f.filename),
                     jsonEscape(f.purpose));
}

}  // namespace switchyard::engine
