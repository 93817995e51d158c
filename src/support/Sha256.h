// SHA-256 of bytes, as lowercase hex: the content hash of the project (request
// hashes, deduplication of candidates, suite fingerprints).
#pragma once

#include <string>
#include <string_view>

namespace ptxforge {

/// Lowercase hex SHA-256 (64 characters) of arbitrary bytes (FIPS 180-4).
std::string sha256Hex(std::string_view bytes);

} // namespace ptxforge
