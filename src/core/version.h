#pragma once

namespace switchyard {
const char* versionString();
}  // namespace switchyard
