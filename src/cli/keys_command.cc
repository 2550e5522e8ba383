#include "cli/keys_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <memory>

#include "auth/keys_file.h"
#include "core/file_stamp.h"

namespace switchyard::cli {
namespace {

struct KeysOptions {
  std::string file;
  std::string name;
  std::string models;
  int64_t rpm = 0;
  int64_t tpm = 0;
};

// Holds an exclusive flock on FILE.lock for the lifetime of a read-modify-write.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
      throw auth::KeysFileError("cannot lock " + path + ".lock");
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

std::string utcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

bool exists(const std::string& path) { return stampOf(path).size >= 0; }

int add(const KeysOptions& o) {
  if (!auth::validKeyName(o.name)) {
    fmt::print(stderr,
               "keys add: --name must be 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter "
               "or digit\n");
    return 2;
  }
  if (o.rpm < 0 || o.tpm < 0 || o.rpm > auth::kMaxPerMinute || o.tpm > auth::kMaxPerMinute) {
    fmt::print(stderr, "keys add: --rpm and --tpm must be between 0 (unlimited) and {}\n",
               auth::kMaxPerMinute);
    return 2;
  }
  auth::KeyRecord record;
  record.name = o.name;
  record.models = auth::parseModelList(o.models);
  record.rpm = o.rpm;
  record.tpm = o.tpm;
  record.created = utcNow();

  FileLock lock(o.file);
  auth::KeysFile file;
  if (exists(o.file)) {
    file = auth::readKeysFile(o.file);
  } else {
    file.hash_key = auth::generateHashKey();
  }
  for (const auth::KeyRecord& key : file.keys) {
    if (key.name == o.name) {
      fmt::print(stderr, "keys add: {} already has a key named {} (revoke it first)\n", o.file,
                 o.name);
      return 1;
    }
  }
  const std::string key = auth::generateKey();
  record.digest = auth::digestOf(file.hash_key, key);
  file.keys.push_back(std::move(record));
  auth::writeKeysFile(o.file, file);
  fmt::print("{}\n", key);
  std::fflush(stdout);
  fmt::print(stderr,
             "keys: added {} to {}. The key above is shown only this once; the file keeps its "
             "digest.\n",
             o.name, o.file);
  return 0;
}

int list(const KeysOptions& o) {
  const auth::KeysFile file = auth::readKeysFile(o.file);
  fmt::print("{:<24} {:<32} {:>10} {:>12} {:<20} {}\n", "NAME", "MODELS", "RPM", "TPM",
             "CREATED", "FINGERPRINT");
  for (const auth::KeyRecord& key : file.keys) {
    std::string models;
    for (const std::string& m : key.models) models += (models.empty() ? "" : ",") + m;
    fmt::print("{:<24} {:<32} {:>10} {:>12} {:<20} {}\n", key.name, models,
               key.rpm > 0 ? std::to_string(key.rpm) : "unlimited",
               key.tpm > 0 ? std::to_string(key.tpm) : "unlimited",
               key.created.empty() ? "-" : key.created,
               auth::toHex(key.digest.data(), 4));  // of the digest, never of the key
  }
  return 0;
}

int revoke(const KeysOptions& o) {
  FileLock lock(o.file);
  auth::KeysFile file = auth::readKeysFile(o.file);
  const auto before = file.keys.size();
  std::erase_if(file.keys, [&](const auth::KeyRecord& key) { return key.name == o.name; });
  if (file.keys.size() == before) {
    fmt::print(stderr, "keys revoke: no key named {} in {}\n", o.name, o.file);
    return 1;
  }
  auth::writeKeysFile(o.file, file);
  fmt::print(stderr, "keys: revoked {} in {}\n", o.name, o.file);
  return 0;
}

template <typename Run>
void guarded(int& exit_code, const char* what, Run run) {
  try {
    exit_code = run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "keys {}: {}\n", what, e.what());
    exit_code = 1;
  }
}

}  // namespace

void addKeysCommand(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<KeysOptions>();
  CLI::App* keys = app.add_subcommand("keys", "Manage the API keys file (add, list, revoke)");
  keys->require_subcommand(1);
  auto fileOption = [&](CLI::App* cmd) {
    cmd->add_option("--file", o->file, "keys file (default: $SWITCHYARD_KEYS_FILE)")
        ->envname("SWITCHYARD_KEYS_FILE")
        ->required();
  };

  CLI::App* add_cmd = keys->add_subcommand("add", "Add a key and print it (once)");
  fileOption(add_cmd);
  add_cmd->add_option("--name", o->name, "the key's name (shown in metrics and logs)")
      ->required();
  add_cmd->add_option("--models", o->models, "models it may use: M1,M2 or '*' for every model")
      ->required();
  add_cmd->add_option("--rpm", o->rpm, "requests per minute (0: unlimited)")
      ->capture_default_str();
  add_cmd->add_option("--tpm", o->tpm, "tokens per minute, prompt + completion (0: unlimited)")
      ->capture_default_str();
  add_cmd->callback([o, &exit_code] { guarded(exit_code, "add", [&] { return add(*o); }); });

  CLI::App* list_cmd = keys->add_subcommand("list", "List the keys (never the keys themselves)");
  fileOption(list_cmd);
  list_cmd->callback([o, &exit_code] { guarded(exit_code, "list", [&] { return list(*o); }); });

  CLI::App* revoke_cmd = keys->add_subcommand("revoke", "Remove a key by name");
  fileOption(revoke_cmd);
  revoke_cmd->add_option("--name", o->name, "the key's name")->required();
  revoke_cmd->callback(
      [o, &exit_code] { guarded(exit_code, "revoke", [&] { return revoke(*o); }); });
}

}  // namespace switchyard::cli
