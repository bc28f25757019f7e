#!/usr/bin/env bash
# debpkgs.sh DIR [LOCK]: bring the Debian packages pinned in LOCK (default packages.lock) into DIR,
# each checked against its SHA-256, and unpack each one's Python modules
# (usr/lib/python3/dist-packages) into DIR/PACKAGE_VERSION/, a directory
# `wasmpy pkg build` takes as an input. Does nothing for a package already
# there and verified.
#
# Exit status: 0 done, 1 a file does not match the lock, 3 this machine
# cannot fetch (no apt, no mirror): callers skip what needs the packages.
#
# Environment: WASMPY_DEBIAN_MIRROR  the archive to use (default: this
#                                    machine's own Debian source)
set -euo pipefail

DIR=${1:?usage: debpkgs.sh DIR [LOCK]}
HERE=$(cd "$(dirname "$0")" && pwd)
LOCK=${2:-$HERE/packages.lock}
ME=debpkgs.sh
# shellcheck source=lib.sh
. "$HERE/lib.sh"
for tool in jq dpkg-deb sha256sum; do
	command -v "$tool" >/dev/null || unavailable "$tool is not installed"
done
read -ra SUITES <<<"$(jq -r '.suites | join(" ")' "$LOCK")"
mkdir -p "$DIR"

for pkg in $(jq -r '.packages | keys[]' "$LOCK"); do
	ver=$(jq -r --arg p "$pkg" '.packages[$p].version' "$LOCK")
	file=$(jq -r --arg p "$pkg" '.packages[$p].file' "$LOCK")
	want=$(jq -r --arg p "$pkg" '.packages[$p].sha256' "$LOCK")
	out=$DIR/${pkg}_$ver
	[ -d "$out" ] && [ -f "$DIR/$file" ] && [ "$(sha256 "$DIR/$file")" = "$want" ] && continue
	if [ ! -f "$DIR/$file" ] || [ "$(sha256 "$DIR/$file")" != "$want" ]; then
		apt_private "$DIR/.apt" deb "${SUITES[@]}"
		(cd "$DIR" && apt-get "${APT[@]}" download "$pkg=$ver") >"$DIR/.fetch.log" 2>&1 ||
			{ tail -n 5 "$DIR/.fetch.log" >&2; unavailable "apt-get download $pkg=$ver failed"; }
	fi
	got=$(sha256 "$DIR/$file")
	if [ "$got" != "$want" ]; then
		rm -f "$DIR/$file"
		bad_input "$pkg" "$file" "Debian ${SUITES[*]}: apt-get download $pkg=$ver" "$got" "$want"
	fi
	tmp=$(mktemp -d "$DIR/.unpack.XXXXXX")
	dpkg-deb -x "$DIR/$file" "$tmp"
	rm -rf "$out"
	mv "$tmp/usr/lib/python3/dist-packages" "$out"
	rm -rf "$tmp"
	say "$pkg $ver: $out"
done
