#!/usr/bin/env bash
# Installs the Debian 12 packages Inferscope needs to build, test and run — only those missing.
# Runs apt-get as root, or through sudo when not root. Safe to run repeatedly; no network
# access happens when everything is already installed.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache
  # engine: oneDNN (its CMake config needs OpenCL's), SentencePiece, formatting, JSON, CLI parsing, tests
  libdnnl-dev ocl-icd-opencl-dev libsentencepiece-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  # inferscope-cli serve: the HTTP transport (Boost.Beast and Boost.Asio, header-only)
  libboost-dev
  # byte-level BPE pre-tokenizer regexes (Unicode properties)
  libpcre2-dev
  # the model catalog's Hugging Face client (catalog/): HTTP(S) with ranges and redirects, and the
  # SHA-256 a download is verified with (OpenSSL's, which libcurl's OpenSSL flavour links anyway)
  libcurl4-openssl-dev libssl-dev
  # desktop app: Qt 6 Quick and the QML modules it loads at run time, SQLite driver
  qt6-declarative-dev qt6-svg-dev libqt6sql6-sqlite
  # a server's API key in the system keyring, only when the person asks (gui/remote/server_keyring.h)
  qtkeychain-qt6-dev
  qml6-module-qtquick qml6-module-qtquick-window qml6-module-qtquick-controls
  qml6-module-qtquick-templates qml6-module-qtquick-layouts qml6-module-qtquick-shapes
  qml6-module-qtquick-dialogs qml6-module-qtqml-workerscript qml6-module-qtqml
  qml6-module-qtqml-models qml6-module-qttest qml6-module-qt-labs-settings
  # Qt 6.4's non-native FileDialog (every file dialog of the app) loads Qt.labs.folderlistmodel
  qml6-module-qt-labs-folderlistmodel
  # headless windows for screenshots and GUI tests
  xvfb xauth imagemagick
  # packages (cpack's .deb: dpkg-shlibdeps, file) and their checks (scripts/test-package.sh)
  dpkg-dev file desktop-file-utils appstream shared-mime-info
  # fuzzing (scripts/ci-fuzz.sh): clang and its libFuzzer/ASan runtimes. Clang 16, not Debian's
  # default 14: libstdc++ 12's <expected> needs conditionally trivial special members (P0848).
  clang-16 libclang-rt-16-dev
)

missing=()
for p in "${packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo=(sudo); else
    echo "install-deps: not root and no sudo; install these as root: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
