#include "auth/keys_file.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "core/text_file.h"
namespace switchyard::auth {
namespace {

std::string scalarText(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) throw KeysFileError(where + ": must be a string");
  return node.Scalar();
}

int64_t perMinute(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) throw KeysFileError(where + ": must be a whole number");
  int64_t value = 0;
  try {
    value = node.as<int64_t>();
  } catch (const YAML::Exception&) {
    throw KeysFileError(where + ": must be a whole number");
  }
  if (value < 0 || value > kMaxPerMinute) {
    throw KeysFileError(where + ": must be between 0 (unlimited) and " +
                        std::to_string(kMaxPerMinute));
  }
  return value;
}

// Text the file can hold and give back unchanged: UTF-8 without control characters (a model
// name is matched against the JSON string of a request, which is UTF-8).
bool printableUtf8(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return false;
    // U+0080…U+009F, the C1 controls: 0xC2 followed by 0x80…0x9F.
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      return false;
    }
  }
  return simdjson::validate_utf8(text.data(), text.size());
}

void requireModels(const std::vector<std::string>& models, const std::string& where) {
  if (models.empty()) throw KeysFileError(where + ": at least one model (or \"*\")");
  for (const std::string& m : models) {
    if (m.empty()) throw KeysFileError(where + ": empty model name");
    if (!printableUtf8(m)) {
      throw KeysFileError(where + ": a model name must be UTF-8 without control characters");
    }
    if (m == kAllModels && models.size() > 1) {
      throw KeysFileError(where + ": \"*\" (every model) cannot be mixed with names");
    }
  }
}

KeyRecord parseKey(const YAML::Node& node, size_t index) {
  const std::string where = "keys[" + std::to_string(index) + "]";
  if (!node.IsMap()) throw KeysFileError(where + ": must be a mapping");
  KeyRecord key;
  bool has_name = false;
  bool has_hash = false;
  bool has_models = false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) throw KeysFileError(where + ": keys must be strings");
    const std::string field = it->first.Scalar();
    const std::string full = where + "." + field;
    const YAML::Node value = it->second;
    if (field == "name") {
      key.name = scalarText(value, full);
      if (!validKeyName(key.name)) {
        throw KeysFileError(full +
                            ": 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or "
                            "digit");
      }
      has_name = true;
    } else if (field == "hash") {
      const auto digest = fromHex<kDigestBytes>(scalarText(value, full));
      if (!digest) throw KeysFileError(full + ": must be 64 hex digits");
      key.digest = *digest;
      has_hash = true;
    } else if (field == "models") {
      if (value.IsScalar()) {
        key.models.push_back(value.Scalar());
      } else if (value.IsSequence()) {
        for (size_t m = 0; m < value.size(); ++m) {
          key.models.push_back(scalarText(value[m], full + "[" + std::to_string(m) + "]"));
        }
      } else {
        throw KeysFileError(full + ": must be a list of model names");
      }
      has_models = true;
    } else if (field == "rpm") {
      key.rpm = perMinute(value, full);
    } else if (field == "tpm") {
      key.tpm = perMinute(value, full);
    } else if (field == "created") {
      key.created = scalarText(value, full);
      if (!printableUtf8(key.created)) {
        throw KeysFileError(full + ": must be UTF-8 without control characters");
      }
    } else {
      throw KeysFileError(full + ": unknown field");
    }
  }
  if (!has_name) throw KeysFileError(where + ".name: required");
  if (!has_hash) throw KeysFileError(where + ".hash: required");
  if (!has_models) throw KeysFileError(where + ".models: required");
  requireModels(key.models, where + ".models");
  return key;
}

}  // namespace

KeysFile parseKeysFile(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw KeysFileError(std::string("invalid YAML: ") + e.what());
  }
  if (!root.IsMap()) throw KeysFileError("top level must be a mapping");
  KeysFile file;
  bool has_hash_key = false;
  try {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (!it->first.IsScalar()) throw KeysFileError("top-level keys must be strings");
      const std::string field = it->first.Scalar();
      const YAML::Node value = it->second;
      if (field == "version") {
        if (!value.IsScalar() || value.Scalar() != "1") {
          throw KeysFileError("version: only version 1 is known");
        }
      } else if (field == "hash_key") {
        const auto key = fromHex<kHashKeyBytes>(scalarText(value, "hash_key"));
        if (!key) throw KeysFileError("hash_key: must be 64 hex digits");
        file.hash_key = *key;
        has_hash_key = true;
      } else if (field == "keys") {
        if (value.IsNull()) continue;
        if (!value.IsSequence()) throw KeysFileError("keys: must be a list");
        for (size_t i = 0; i < value.size(); ++i) file.keys.push_back(parseKey(value[i], i));
      } else {
        throw KeysFileError(field + ": unknown field");
      }
    }
  } catch (const YAML::Exception& e) {
    throw KeysFileError(std::string("invalid keys file: ") + e.what());
  }
  if (!has_hash_key) throw KeysFileError("hash_key: required");
  std::set<std::string> names;
  std::set<KeyDigest> digests;
  for (const KeyRecord& key : file.keys) {
    if (!names.insert(key.name).second) throw KeysFileError("duplicate key name " + key.name);
    if (!digests.insert(key.digest).second) {
      throw KeysFileError("key " + key.name + ": the same key is listed twice");
    }
  }
  return file;
}

std::string renderKeysFile(const KeysFile& file) {
  YAML::Emitter out;
  out << YAML::Comment(
      "Switchyard API keys: keyed BLAKE2b-256 digests only, never the keys. Manage with "
      "`switchyard keys add|list|revoke --file FILE`.");
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << 1;
  out << YAML::Key << "hash_key" << YAML::Value
      << toHex(file.hash_key.data(), file.hash_key.size());
  out << YAML::Key << "keys" << YAML::Value << YAML::BeginSeq;
  for (const KeyRecord& key : file.keys) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << key.name;
    out << YAML::Key << "hash" << YAML::Value << toHex(key.digest.data(), key.digest.size());
    out << YAML::Key << "models" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& m : key.models) out << YAML::DoubleQuoted << m;
    out << YAML::EndSeq;
    out << YAML::Key << "rpm" << YAML::Value << key.rpm;
    out << YAML::Key << "tpm" << YAML::Value << key.tpm;
    if (!key.created.empty()) out << YAML::Key << "created" << YAML::Value << key.created;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  std::string text = out.c_str();
  text.push_back('\n');
  return text;
}

KeysFile readKeysFile(const std::string& path) {
  std::string error;
  const std::optional<std::string> text = readTextFile(path, &error);
  if (!text) throw KeysFileError(error);
  try {
    return parseKeysFile(*text);
  } catch (const KeysFileError& e) {
    throw KeysFileError(path + ": " + e.what());
  }
}

void writeKeysFile(const std::string& path, const KeysFile& file) {
  const std::string text = renderKeysFile(file);
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw KeysFileError("cannot write " + temp + ": " + std::strerror(errno));
  size_t written = 0;
  bool ok = true;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    written += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = ok ? errno : saved;
    ::unlink(temp.c_str());
    throw KeysFileError("cannot write " + path + ": " + std::strerror(error));
  }
}

std::vector<std::string> parseModelList(const std::string& text) {
  std::vector<std::string> models;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(start, comma - start);
    const size_t first = part.find_first_not_of(" \t");
    const size_t last = part.find_last_not_of(" \t");
    if (first != std::string::npos) models.push_back(part.substr(first, last - first + 1));
    start = comma + 1;
  }
  requireModels(models, "--models");
  return models;
}

}  // namespace switchyard::auth
