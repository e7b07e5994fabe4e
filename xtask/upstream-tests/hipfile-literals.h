/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: size literals. */
#pragma once
#include <cstddef>
constexpr std::size_t operator""_KiB(unsigned long long n) { return static_cast<std::size_t>(n) << 10; }
constexpr std::size_t operator""_MiB(unsigned long long n) { return static_cast<std::size_t>(n) << 20; }
constexpr std::size_t operator""_GiB(unsigned long long n) { return static_cast<std::size_t>(n) << 30; }
