#!/usr/bin/env bash
# The package test (run by scripts/test.sh after ctest; needs build/ built): makes the .deb and the
# .tar.gz with cpack, unpacks them into throwaway folders (nothing is installed on this machine),
# and checks that
#   - the .deb's dependencies are real Debian package names that apt can satisfy (simulated);
#   - the files are where desktops look for them, and the desktop file, metainfo and MIME type validate;
#   - the installed inferscope-cli finds the installed model (not the source tree's) and writes the
#     known greedy story; the archive's does the same from its own share/;
#   - the installed GUI renders an answer to a PNG under Xvfb and opens its model file dialog, with no
#     QML of ours on disk, and every library it loads (the dialog's too) comes from a package the
#     .deb depends on (directly or through dependencies).
# Prints "package-test: N passed, N failed" last; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$src/build
start=$SECONDS
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "package-test: ok   $*"; }
bad() { failed=$((failed + 1)); echo "package-test: FAIL $*" >&2; }
check() {  # check "what" command...: runs the command quietly, reports, keeps its output on failure
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$what"; else bad "$what"; printf '%s\n' "$out" | tail -20 >&2; fi
}

tmp=$(mktemp -d /tmp/inferscope-package-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/runtime XDG_CONFIG_HOME=$tmp/home/.config XDG_DATA_HOME=$tmp/home/.local/share
mkdir -p "$HOME" && mkdir -m 700 "$XDG_RUNTIME_DIR"
unset INFERSCOPE_MODEL_DIR QML_IMPORT_PATH QML2_IMPORT_PATH QT_PLUGIN_PATH QT_QPA_PLATFORM  # the real xcb path, under Xvfb

# ---- build the packages --------------------------------------------------------------------------
rm -f "$build"/packages/*.deb "$build"/packages/*.tar.gz
if ! (cd "$build" && cpack -G "DEB;TGZ" >"$tmp/cpack.log" 2>&1); then
  cat "$tmp/cpack.log" >&2
  echo "package-test: cpack failed"; echo "package-test: $passed passed, $((failed + 1)) failed"; exit 1
fi
deb=$(ls "$build"/packages/inferscope_*.deb)
tgz=$(ls "$build"/packages/inferscope-*.tar.gz)
echo "package-test: built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) and $(basename "$tgz")"

# ---- dependencies: real names, satisfiable ------------------------------------------------------
depends=$(dpkg-deb -f "$deb" Depends)
names=$(printf '%s\n' "$depends" | tr ',' '\n' | sed -e 's/([^)]*)//g' -e 's/|.*//' -e 's/ //g' | grep -v '^$')
unknown=()
for n in $names; do
  apt-cache show "$n" >/dev/null 2>&1 || dpkg-query -W "$n" >/dev/null 2>&1 || unknown+=("$n")
done
if [ ${#unknown[@]} -eq 0 ]; then ok "Depends names $(echo $names | wc -w) known packages"; else bad "unknown Depends: ${unknown[*]}"; fi
# Loaded only when a file dialog opens (Qt 6.4's non-native FileDialog), so the run below never sees it.
if printf '%s\n' $names | grep -qx qml6-module-qt-labs-folderlistmodel; then ok "Depends names the file dialogs' Qt.labs.folderlistmodel"
else bad "Depends lacks qml6-module-qt-labs-folderlistmodel (every file dialog would crash)"; fi
check "apt can satisfy the .deb's dependencies (simulated install)" \
  bash -c 'apt-get install -s --no-install-recommends "$0" | grep -q "^Inst inferscope "' "$deb"

# ---- unpack into a throwaway root; files in the standard places ---------------------------------
root=$tmp/root
dpkg-deb -x "$deb" "$root"
id=io.github.inferscope.Inferscope
missing=()
for f in usr/bin/inferscope usr/bin/inferscope-cli usr/share/inferscope/models/stories260K.gguf \
         usr/share/inferscope/models/LICENSE-stories260K.txt usr/share/applications/$id.desktop \
         usr/share/icons/hicolor/scalable/apps/$id.svg usr/share/metainfo/$id.metainfo.xml \
         usr/share/mime/packages/inferscope.xml usr/share/doc/inferscope/copyright; do
  [ -e "$root/$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then ok "files in /usr/bin and /usr/share"; else bad "missing from the .deb: ${missing[*]}"; fi
if dpkg-deb -c "$deb" | grep -qE '\.qml$|/qml/|qmldir'; then bad "QML files on disk in the .deb"; else ok "no QML on disk (compiled into the binary)"; fi

check "desktop-file-validate" desktop-file-validate "$root/usr/share/applications/$id.desktop"
check "appstreamcli validate" appstreamcli validate --no-net "$root/usr/share/metainfo/$id.metainfo.xml"
mkdir -p "$tmp/mime/packages" && cp "$root/usr/share/mime/packages/inferscope.xml" "$tmp/mime/packages/"
check "update-mime-database: application/x-gguf for *.gguf" \
  bash -c 'update-mime-database "$0" && grep -q "application/x-gguf:\*\.gguf" "$0/globs2" && grep -q "application/x-gguf" "$0/magic"' "$tmp/mime"

# ---- the installed command-line tool on the installed model -------------------------------------
model=$root/usr/share/inferscope/models/stories260K.gguf
check "inferscope-cli info finds the installed model" \
  bash -c '"$0/usr/bin/inferscope-cli" info | grep -qF "($1)"' "$root" "$(readlink -f "$model")"
story="Once upon a time, there was a little girl named Lily. She loved to play"
check "inferscope-cli generate writes the greedy story" \
  bash -c '"$0/usr/bin/inferscope-cli" generate --prompt "Once upon a time" --temperature 0 --max-tokens 20 2>/dev/null | grep -qF "$1"' "$root" "$story"

# ---- the archive: same tree under one folder ----------------------------------------------------
mkdir -p "$tmp/archive" && tar -xzf "$tgz" -C "$tmp/archive"
adir=$(ls -d "$tmp"/archive/inferscope-*)
check "archive: bin/inferscope-cli finds share/inferscope/models" \
  bash -c '"$0/bin/inferscope-cli" info | grep -qF "($0/share/inferscope/models/stories260K.gguf)"' "$(readlink -f "$adir")"

# ---- the installed GUI under Xvfb, tracing every library it loads -------------------------------
shot=$tmp/shot.png
if timeout 240 xvfb-run -a -s "-screen 0 1400x900x24" env LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" \
     "$root/usr/bin/inferscope" --screenshot "$shot" --prompt "Once upon a time" --open-dialog >"$tmp/gui.log" 2>&1 \
   && [ "$(identify -format '%m %wx%h' "$shot" 2>/dev/null)" = "PNG 1400x900" ] \
   && [ "$(identify -format '%k' "$shot")" -gt 50 ]; then
  ok "installed inferscope --screenshot wrote a 1400x900 PNG ($(grep -o 'answer of [0-9]* tokens' "$tmp/gui.log"))"
else
  bad "installed inferscope --screenshot"; tail -20 "$tmp/gui.log" >&2
fi
# The model's file dialog opened in the installed app (--open-dialog, as Ctrl+O), loading the QML
# modules only a dialog needs; they are traced below with the rest.
if grep -q "the file dialog is open" "$tmp/gui.log" && grep -qh 'folderlistmodel' "$tmp"/ld.* 2>/dev/null; then
  ok "installed inferscope opened its file dialog (Qt.labs.folderlistmodel loaded)"
else
  bad "installed inferscope did not open its file dialog"; grep -i "dialog\|module" "$tmp/gui.log" | tail -5 >&2
fi

# Loaded files → the packages that own them → each must be in the closure of the .deb's Depends.
loaded=$(grep -h -E 'calling init: |file=/' "$tmp"/ld.* 2>/dev/null \
  | sed -n -e 's/.*calling init: \(.*\)$/\1/p' -e 's/.*file=\(\/[^ ;]*\).*/\1/p' | sort -u \
  | while read -r f; do [ -f "$f" ] && case "$f" in "$root"/*) ;; *) readlink -f "$f" ;; esac; done | sort -u)
if [ -z "$loaded" ]; then
  bad "no library trace from the GUI"
else
  owners=$(printf '%s\n' "$loaded" | xargs dpkg -S 2>/dev/null | cut -d: -f1 | tr ',' '\n' | sed 's/ //g' | sort -u)
  closure=$(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts \
              --no-breaks --no-replaces --no-enhances $names 2>/dev/null | grep -v '^ ' | sort -u)
  # Loaded when present, needed by nothing we do: Qt's SVG image-format plugin; libXcursor (and its
  # libXrender), which the xcb platform plugin opens for cursor themes.
  optional="libqt6svg6 libxcursor1 libxrender1"
  extra=$(comm -23 <(printf '%s\n' "$owners") <(printf '%s\n' $closure $optional | sort -u))
  if [ -z "$extra" ]; then
    ok "the GUI loaded $(printf '%s\n' "$loaded" | wc -l) files from $(printf '%s\n' "$owners" | wc -l) packages, all in the Depends closure"
  else
    bad "the GUI loaded files from packages the .deb does not pull in: $(echo $extra)"
  fi
fi

echo "package-test: done in $((SECONDS - start)) s"
echo "package-test: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
