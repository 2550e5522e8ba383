#include "api/request_inspector.h"

#include <simdjson.h>

#include <charconv>
#include <string>
#include <system_error>
#include <utility>

namespace switchyard::api {

static_assert(RequestInspector::kRequiredPadding == simdjson::SIMDJSON_PADDING,
              "kRequiredPadding must match the simdjson build's padding");

namespace od = simdjson::ondemand;
using simdjson::error_code;
using simdjson::SUCCESS;

namespace {

std::string_view trimTrailingJsonSpace(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

struct RequestInspector::Impl {
  od::parser parser;
  std::string padded_copy;  // only for callers that could not reserve the padding
  std::string message;
  std::string_view param;
  InspectError field_error = InspectError::kNone;
  size_t prompt_tokens = 0;  // token ids seen in prompt/input, converted to bytes at the end
  bool have_max_completion_tokens = false;
  PromptTextSink* sink = nullptr;

  void prompt(std::string_view text) {
    if (sink != nullptr) sink->text(text);
  }

  Impl() { message.reserve(160); }

  // Records the first field error; walking continues so that a later syntax error still wins
  // (a malformed body is reported as such, whatever its fields look like).
  void fieldError(std::string_view field, std::string_view what) {
    if (field_error != InspectError::kNone) return;
    field_error = InspectError::kInvalidField;
    param = field;
    message.assign("'");
    message.append(field);
    message.append("' ");
    message.append(what);
  }

  error_code skipValue(od::value v, int depth);
  error_code readString(od::value v, std::string_view field, std::string_view& out, bool nullable);
  error_code readBool(od::value v, std::string_view field, bool& out);
  error_code readCount(od::value v, std::string_view field, int64_t& out);
  error_code readStreamOptions(od::value v, int depth, InspectedRequest& out);
  error_code readPrompt(od::value v, std::string_view field, int depth, size_t& bytes);
  error_code readMessages(od::value v, int depth, size_t& bytes);
  error_code readContent(od::value v, int depth, size_t& bytes);
  error_code readItems(od::value v, int64_t& count, size_t& bytes);
  error_code readLenientCount(od::value v, int64_t& out);
  error_code readTopLevel(std::string_view key, od::value v, InspectedRequest& out);
};

// Walks a value the gateway does not interpret, only to prove it is valid JSON.
error_code RequestInspector::Impl::skipValue(od::value v, int depth) {
  if (depth > kMaxDepth) return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object object;
      if (auto e = v.get_object().get(object)) return e;
      for (auto field_result : object) {
        od::field field;
        if (auto e = std::move(field_result).get(field)) return e;
        std::string_view key;  // unescaping validates the key's escapes
        if (auto e = field.unescaped_key().get(key)) return e;
        if (auto e = skipValue(field.value(), depth + 1)) return e;
      }
      return SUCCESS;
    }
    case od::json_type::array: {
      od::array array;
      if (auto e = v.get_array().get(array)) return e;
      for (auto element_result : array) {
        od::value element;
        if (auto e = element_result.get(element)) return e;
        if (auto e = skipValue(element, depth + 1)) return e;
      }
      return SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      return v.get_string().get(s);
    }
    case od::json_type::number: {
      double d;
      return v.get_double().get(d);
    }
    case od::json_type::boolean: {
      bool b;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (auto e = v.is_null().get(is_null)) return e;
      return is_null ? SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::TAPE_ERROR;
}

// Reads a string field. Without escapes the view points into the body (no copy); with escapes
// it points into the parser's string buffer, which the inspector owns until the next inspect().
error_code RequestInspector::Impl::readString(od::value v, std::string_view field,
                                              std::string_view& out, bool nullable) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::null && nullable) {
    out = {};
    return skipValue(v, 1);
  }
  if (type != od::json_type::string) {
    fieldError(field, "must be a string");
    return skipValue(v, 1);
  }
  std::string_view raw = trimTrailingJsonSpace(v.raw_json_token());
  if (raw.size() >= 2 && raw.back() == '"' && raw.find('\\') == std::string_view::npos) {
    out = raw.substr(1, raw.size() - 2);
    return SUCCESS;  // left unconsumed: the object iterator steps over it
  }
  return v.get_string().get(out);
}

error_code RequestInspector::Impl::readBool(od::value v, std::string_view field, bool& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::boolean) return v.get_bool().get(out);
  if (type == od::json_type::null) {
    out = false;
    return skipValue(v, 1);
  }
  fieldError(field, "must be a boolean");
  return skipValue(v, 1);
}

// A non-negative integer or null (leaves `out` unchanged).
error_code RequestInspector::Impl::readCount(od::value v, std::string_view field, int64_t& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::null) return skipValue(v, 1);
  if (type != od::json_type::number) {
    fieldError(field, "must be an integer");
    return skipValue(v, 1);
  }
  std::string_view raw = trimTrailingJsonSpace(v.raw_json_token());
  double as_double;
  if (auto e = v.get_double().get(as_double)) return e;  // rejects what JSON rejects ("007")
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
  if (ec != std::errc() || ptr != raw.data() + raw.size()) {
    fieldError(field, "must be an integer");
  } else if (value < 0) {
    fieldError(field, "must not be negative");
  } else {
    out = value;
  }
  return SUCCESS;
}

error_code RequestInspector::Impl::readStreamOptions(od::value v, int depth,
                                                     InspectedRequest& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::null) return skipValue(v, depth);
  if (type != od::json_type::object) {
    fieldError("stream_options", "must be an object");
    return skipValue(v, depth);
  }
  od::object object;
  if (auto e = v.get_object().get(object)) return e;
  for (auto field_result : object) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    error_code e = key == "include_usage" ? readBool(field.value(), "stream_options", out.include_usage)
                                          : skipValue(field.value(), depth + 1);
    if (e) return e;
  }
  return SUCCESS;
}

// `prompt` (completions) and `input` (embeddings): a string, an array of strings, an array of
// token ids, or an array of token-id arrays.
error_code RequestInspector::Impl::readPrompt(od::value v, std::string_view field, int depth,
                                              size_t& bytes) {
  if (depth > kMaxDepth) return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      if (auto e = v.get_string().get(s)) return e;
      bytes += s.size();
      if (field == "prompt") prompt(s);
      return SUCCESS;
    }
    case od::json_type::number: {
      double d;
      if (auto e = v.get_double().get(d)) return e;
      ++prompt_tokens;
      return SUCCESS;
    }
    case od::json_type::null:
      return skipValue(v, depth);
    case od::json_type::array: {
      if (depth >= 3) break;  // top-level field (1) -> array (2) -> token-id array (3) at most
      od::array array;
      if (auto e = v.get_array().get(array)) return e;
      for (auto element_result : array) {
        od::value element;
        if (auto e = element_result.get(element)) return e;
        if (auto e = readPrompt(element, field, depth + 1, bytes)) return e;
      }
      return SUCCESS;
    }
    default:
      break;
  }
  fieldError(field, "must be a string, an array of strings or an array of token ids");
  return skipValue(v, depth);
}

error_code RequestInspector::Impl::readContent(od::value v, int depth, size_t& bytes) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    bytes += s.size();
    prompt(s);
    return SUCCESS;
  }
  if (type == od::json_type::null) return skipValue(v, depth);
  if (type != od::json_type::array) {
    fieldError("messages", "content must be a string, an array of parts or null");
    return skipValue(v, depth);
  }
  od::array parts;
  if (auto e = v.get_array().get(parts)) return e;
  for (auto part_result : parts) {
    od::value part;
    if (auto e = part_result.get(part)) return e;
    od::json_type part_type;
    if (auto e = part.type().get(part_type)) return e;
    if (part_type != od::json_type::object) {
      fieldError("messages", "content parts must be objects");
      if (auto e = skipValue(part, depth + 1)) return e;
      continue;
    }
    od::object object;
    if (auto e = part.get_object().get(object)) return e;
    for (auto field_result : object) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return e;
      // Only text parts carry "text"; image and audio parts are not prompt text.
      if (key == "text") {
        od::value text = field.value();
        od::json_type text_type;
        if (auto e = text.type().get(text_type)) return e;
        if (text_type == od::json_type::string) {
          std::string_view s;
          if (auto e = text.get_string().get(s)) return e;
          bytes += s.size();
          prompt(s);
          continue;
        }
        fieldError("messages", "content part text must be a string");
        if (auto e = skipValue(text, depth + 2)) return e;
        continue;
      }
      if (auto e = skipValue(field.value(), depth + 2)) return e;
    }
  }
  return SUCCESS;
}

error_code RequestInspector::Impl::readMessages(od::value v, int depth, size_t& bytes) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type != od::json_type::array) {
    fieldError("messages", "must be an array");
    return skipValue(v, depth);
  }
  od::array messages;
  if (auto e = v.get_array().get(messages)) return e;
  for (auto message_result : messages) {
    od::value message_value;
    if (auto e = message_result.get(message_value)) return e;
    od::json_type message_type;
    if (auto e = message_value.type().get(message_type)) return e;
    if (message_type != od::json_type::object) {
      fieldError("messages", "must contain objects");
      if (auto e = skipValue(message_value, depth + 1)) return e;
      continue;
    }
    od::object object;
    if (auto e = message_value.get_object().get(object)) return e;
    for (auto field_result : object) {
      od::field field;
      if (auto e = std::move(field_result).get(field)) return e;
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return e;
      error_code e = key == "content" ? readContent(field.value(), depth + 2, bytes)
                                      : skipValue(field.value(), depth + 2);
      if (e) return e;
    }
  }
  return SUCCESS;
}

// `documents`, `text_1`, `text_2`: a string (one item) or an array of items (strings, or objects
// such as {"text": …} whose text is not counted). Anything else is skipped, not refused.
error_code RequestInspector::Impl::readItems(od::value v, int64_t& count, size_t& bytes) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == od::json_type::string) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    bytes += s.size();
    count = 1;
    return SUCCESS;
  }
  if (type != od::json_type::array) return skipValue(v, 1);
  od::array array;
  if (auto e = v.get_array().get(array)) return e;
  count = 0;
  for (auto element_result : array) {
    od::value element;
    if (auto e = element_result.get(element)) return e;
    ++count;
    od::json_type element_type;
    if (auto e = element.type().get(element_type)) return e;
    if (element_type == od::json_type::string) {
      std::string_view s;
      if (auto e = element.get_string().get(s)) return e;
      bytes += s.size();
      continue;
    }
    if (auto e = skipValue(element, 2)) return e;
  }
  return SUCCESS;
}

// A positive integer, else left as it is (the engine judges the field).
error_code RequestInspector::Impl::readLenientCount(od::value v, int64_t& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type != od::json_type::number) return skipValue(v, 1);
  const std::string_view raw = trimTrailingJsonSpace(v.raw_json_token());
  double as_double;
  if (auto e = v.get_double().get(as_double)) return e;  // validates the number
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), value);
  if (ec == std::errc() && ptr == raw.data() + raw.size() && value > 0) out = value;
  return SUCCESS;
}

error_code RequestInspector::Impl::readTopLevel(std::string_view key, od::value v,
                                                InspectedRequest& out) {
  // Top-level values sit at depth 1. Duplicate keys: the last occurrence wins.
  if (key == "model") return readString(v, "model", out.model, /*nullable=*/false);
  if (key == "stream") return readBool(v, "stream", out.stream);
  if (key == "stream_options") return readStreamOptions(v, 1, out);
  if (key == "user") return readString(v, "user", out.user, /*nullable=*/true);
  if (key == "max_completion_tokens") {
    int64_t value = -1;
    if (auto e = readCount(v, "max_completion_tokens", value)) return e;
    if (value >= 0) {
      out.max_tokens = value;
      have_max_completion_tokens = true;
    }
    return SUCCESS;
  }
  if (key == "max_tokens") {
    int64_t value = -1;
    if (auto e = readCount(v, "max_tokens", value)) return e;
    if (value >= 0 && !have_max_completion_tokens) out.max_tokens = value;
    return SUCCESS;
  }
  if (key == "messages") return readMessages(v, 1, out.prompt_bytes);
  if (key == "prompt") return readPrompt(v, "prompt", 1, out.prompt_bytes);
  if (key == "input") return readPrompt(v, "input", 1, out.prompt_bytes);
  if (key == "documents") return readItems(v, out.documents, out.prompt_bytes);
  if (key == "text_1") return readItems(v, out.text_1, out.prompt_bytes);
  if (key == "text_2") return readItems(v, out.text_2, out.prompt_bytes);
  if (key == "query") {
    int64_t ignored = -1;
    return readItems(v, ignored, out.prompt_bytes);
  }
  if (key == "n") return readLenientCount(v, out.n);
  return skipValue(v, 1);
}

RequestInspector::RequestInspector() : impl_(std::make_unique<Impl>()) {}
RequestInspector::~RequestInspector() = default;

InspectError RequestInspector::inspect(const char* data, size_t size, size_t capacity,
                                       InspectedRequest& out) {
  Impl& s = *impl_;
  out = InspectedRequest{};
  s.message.clear();
  s.param = {};
  s.field_error = InspectError::kNone;
  s.prompt_tokens = 0;
  s.have_max_completion_tokens = false;
  if (s.sink != nullptr) s.sink->reset();

  auto malformed = [&](error_code e) {
    s.message.assign("malformed JSON body: ");
    s.message.append(simdjson::error_message(e));
    s.param = {};
    return InspectError::kMalformedJson;
  };

  const char* buffer = data;
  if (capacity < size || capacity - size < kRequiredPadding) {
    // Slow path: the caller could not reserve the padding. Reuses the copy's capacity.
    s.padded_copy.assign(data, size);
    s.padded_copy.append(kRequiredPadding, '\0');
    buffer = s.padded_copy.data();
    capacity = s.padded_copy.size();
  }

  od::document doc;
  if (auto e = s.parser.iterate(buffer, size, capacity).get(doc)) return malformed(e);
  od::object object;
  if (auto e = doc.get_object().get(object)) {
    if (e == simdjson::INCORRECT_TYPE) {
      s.message.assign("request body must be a JSON object");
      return InspectError::kMalformedJson;
    }
    return malformed(e);
  }
  for (auto field_result : object) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return malformed(e);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return malformed(e);
    if (auto e = s.readTopLevel(key, field.value(), out)) return malformed(e);
  }
  // On-Demand stops at the object's closing brace; anything after it is not one JSON document.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    s.message.assign("malformed JSON body: unexpected content after the top-level object");
    return InspectError::kMalformedJson;
  }

  if (s.field_error != InspectError::kNone) return s.field_error;
  if (out.model.empty()) {
    s.message.assign("you must provide a model parameter");
    s.param = "model";
    return InspectError::kMissingModel;
  }
  out.prompt_bytes += s.prompt_tokens * kBytesPerPromptToken;
  return InspectError::kNone;
}

void RequestInspector::setPromptSink(PromptTextSink* sink) { impl_->sink = sink; }

std::string_view RequestInspector::errorMessage() const { return impl_->message; }
std::string_view RequestInspector::errorParam() const { return impl_->param; }

}  // namespace switchyard::api
