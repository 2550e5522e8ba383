// Whole-file reads and atomic writes for start-up and reload code (configs, profiles, scenarios,
// key files). Errors are values: nothing here throws, whatever the path names.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

// Reads a whole file (or what a pipe gives until its end); nullopt (and `error`, naming the path
// and why) when the path is empty, missing, unreadable or a directory.
std::optional<std::string> readTextFile(const std::string& path, std::string* error);
// Writes via a temporary file and rename, so a reader never sees half a file.
bool writeTextFile(const std::string& path, std::string_view text, std::string* error);

}  // namespace switchyard
