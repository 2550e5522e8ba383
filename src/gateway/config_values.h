// Typed readers for configuration values, shared by the config sections' parsers: the ones of
// core/yaml_values.h, under the gateway's namespace. Each throws ConfigError naming the key when
// the value has the wrong type or is out of range.
#pragma once

#include "core/yaml_values.h"
#include "gateway/config.h"

namespace switchyard::gateway {

using switchyard::millis;
using switchyard::number;
using switchyard::scalar;

}  // namespace switchyard::gateway
