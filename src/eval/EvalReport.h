// Forwarding header: the eval reports moved to report/EvalReport.h (report sits
// below eval). Kept until the CLI includes the new header; then delete it.
#pragma once

#include "report/EvalReport.h"

namespace ptxforge::eval {
using report::compareMarkdown;
using report::evalHtml;
using report::evalMarkdown;
using report::leaderboardMarkdown;
} // namespace ptxforge::eval
