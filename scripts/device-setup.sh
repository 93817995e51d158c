#!/usr/bin/env bash
# The GPU machine (the device tool's H200) lacks a few Debian -dev packages
# ptxforge builds against. This script does both halves of carrying them:
#
#   bash scripts/device-setup.sh download   # here: fetch the .debs into .gpu/ (ignored by git)
#   source scripts/device-setup.sh          # there (with .gpu in the run's `carry`): unpack them
#                                           # under /tmp/pfx and export CMake's and the loader's paths
#
# Then `bash scripts/gpu-check.sh OUT BUILD` (or any cmake build) works there.
# cpp-httplib (serve, the llm tests) is compiled with OpenSSL, zlib and brotli:
# its pkg-config file names their -dev packages.
packages=(libtomlplusplus-dev libtomlplusplus3 libsqlite3-dev libsqlite3-0
          libcpp-httplib-dev libcpp-httplib0.11 libssl-dev zlib1g-dev libbrotli-dev)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "download" ]; then
  set -euo pipefail
  mkdir -p "$here/.gpu"
  (cd "$here/.gpu" && apt-get download "${packages[@]}")
  ls -l "$here/.gpu"
else
  mkdir -p /tmp/pfx
  for deb in "$here"/.gpu/*.deb; do dpkg -x "$deb" /tmp/pfx; done
  export CMAKE_PREFIX_PATH=/tmp/pfx/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=/tmp/pfx/usr/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}
  # The .pc files say prefix=/usr; CPATH and LIBRARY_PATH above cover that.
  export PKG_CONFIG_PATH=/tmp/pfx/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/pfx/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
fi
