#include "core/version.h"

namespace switchyard {
const char* versionString() { return "0.1.0"; }
}  // namespace switchyard
