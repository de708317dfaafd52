# Sourced by the build scripts (build.sh, package.sh, ci-*.sh): compile through ccache when it is
# installed, with paths taken relative to the checkout, so that another clone of the same commit
# (CI's fresh clone, a second build folder) reuses what was compiled. Without ccache, nothing changes.
ccache_args=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$PWD"
  ccache_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
