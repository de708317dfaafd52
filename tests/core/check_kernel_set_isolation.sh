#!/bin/sh
# ctest (tests/CMakeLists.txt, builds without INFERSCOPE_NATIVE): the code outside the kernel sets
# runs on any x86-64 CPU, and each set's code is private to it (core/common/kernel_set.h).
#  1. No object of the engine library, the CLI or the GUI library outside the kernel sets uses an
#     AVX register (ymm/zmm), except the bandwidth probe's sumAvx2/sumAvx512 (chosen by the set).
#  2. Each set's object (core/kernels_<set>.o) defines no global symbol but its two tables, so the
#     linker can never resolve another object's call to a set's copy of an inline function.
# Usage: check_kernel_set_isolation.sh BUILD_DIR
set -eu
build=$1
status=0
objects=$(find "$build/core/CMakeFiles/inferscope_core.dir" "$build/cli" "$build/gui" -name '*.o' 2>/dev/null || true)
[ -n "$objects" ] || { echo "no objects under $build"; exit 1; }
for o in $objects; do
  leaks=$(objdump -d --no-show-raw-insn -C "$o" | awk '
    /^[0-9a-f]+ <.*>:$/ { fn = $0; next }
    /%[yz]mm[0-9]/ { if (!(fn in seen)) { seen[fn] = 1; print fn } }' | grep -v -e 'sumAvx2' -e 'sumAvx512' || true)
  if [ -n "$leaks" ]; then echo "AVX code outside the kernel sets in $o:"; echo "$leaks" | head -5; status=1; fi
done
echo "checked $(echo "$objects" | wc -l) objects for AVX registers outside the kernel sets"
for set in portable avx2 avx512; do
  o=$build/core/kernels_$set.o
  [ -f "$o" ] || continue
  globals=$(nm --defined-only "$o" | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort | tr '\n' ' ')
  want="inferscope_backend_${set}_kernels inferscope_decode_${set}_kernels "
  if [ "$globals" = "$want" ]; then echo "$set: global symbols: $globals"
  else echo "$set: global symbols besides the tables: $globals"; status=1; fi
done
exit $status
