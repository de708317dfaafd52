#pragma once
// The server's requests bound their JSON shape with core's check (common/json_shape.h), which the
// model catalog's hub listings and metadata files share.

#include "common/json_shape.h"

namespace inferscope::server {
using inferscope::JsonShapeLimits;
using inferscope::jsonShapeError;
}  // namespace inferscope::server
