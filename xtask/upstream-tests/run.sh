#!/usr/bin/env bash
# Builds upstream hipFile's system tests (ROCm/rocm-systems, projects/hipfile/test/system: batch.cpp
# with util.cpp and util.h, unchanged; not part of this repository) against an install tree of
# this repository (`cargo xtask dist PREFIX`: include/hipfile.h, lib/libhipfile.so.0 and the mock
# HIP runtime), HIP 6's headers, and the stand-ins for upstream's other test headers in this
# directory, then runs them over the mock HIP runtime answering as HIP 6.
#
#   bash xtask/upstream-tests/run.sh PREFIX UPSTREAM_DIR HIP6_INCLUDE_DIR [TEST.cpp...]
#
# UPSTREAM_DIR holds the upstream sources (util.cpp, util.h and the tests, default batch.cpp);
# HIP6_INCLUDE_DIR is a directory with hip/hip_runtime_api.h of ROCm 6 (ROCm/HIP's include/,
# plus the hip/hip_version.h its build generates). Needs gtest (Debian: libgtest-dev).
set -euo pipefail
PREFIX=$1
UP=$2
HIP6=$3
shift 3
TESTS=("${@:-batch.cpp}")
HERE=$(cd "$(dirname "$0")" && pwd)
[ -e "$PREFIX/lib/libhipfile.so.0" ] || { echo "no install tree at $PREFIX (cargo xtask dist PREFIX)" >&2; exit 1; }
OUT=$(mktemp -d)
SRCS=()
for t in "${TESTS[@]}"; do SRCS+=("$UP/$t"); done
g++ -std=c++17 -D__HIP_PLATFORM_AMD__ -D_GNU_SOURCE -I"$HERE" -I"$HIP6" -I"$PREFIX/include" -I"$UP" \
    "${SRCS[@]}" "$UP/util.cpp" "$HERE/main.cpp" -L"$PREFIX/lib" -lhipfile -Wl,--no-as-needed -lhipfile_mockhip \
    -Wl,--as-needed -lgtest -lpthread -Wl,-rpath,"$PREFIX/lib" -o "$OUT/system-tests"
mkdir -p "$OUT/data"
HIPFILE_MOCK_HIP_ABI=6 HIPFILE_TEST_DIR="$OUT/data" "$OUT/system-tests"
