#!/usr/bin/env bash
# debpkgs.sh DIR: bring the Debian packages pinned in packages.lock into DIR,
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

DIR=${1:?usage: debpkgs.sh DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
LOCK=$HERE/packages.lock
say() { printf 'debpkgs.sh: %s\n' "$*" >&2; }
unavailable() { say "unavailable: $*"; exit 3; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }
for tool in jq dpkg-deb sha256sum; do
	command -v "$tool" >/dev/null || unavailable "$tool is not installed"
done
SUITES=$(jq -r '.suites | join(" ")' "$LOCK")
mkdir -p "$DIR"

# mirror: the first URI of this machine's Debian archive entries.
mirror() {
	if [ -n "${WASMPY_DEBIAN_MIRROR:-}" ]; then echo "$WASMPY_DEBIAN_MIRROR"; return; fi
	{ cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
		awk 'tolower($1) == "uris:" && $2 ~ /debian\/?$/ { print $2; exit }'
	if [ -r /etc/apt/sources.list ]; then
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /debian\/?$/) { print $i; exit } }' /etc/apt/sources.list
	fi
}

APT=()
# apt_private: apt options for a private view of $SUITES that leaves the
# machine's own sources, lists and cache alone.
apt_private() {
	[ ${#APT[@]} -eq 0 ] || return 0
	command -v apt-get >/dev/null || unavailable "apt-get is not installed"
	local m apt=$DIR/.apt keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	m=$(mirror | head -n 1)
	[ -n "$m" ] || unavailable "no Debian mirror in /etc/apt (set WASMPY_DEBIAN_MIRROR)"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/prefs"
	{
		printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' "$m" "$SUITES"
		[ -f "$keyring" ] && printf 'Signed-By: %s\n' "$keyring"
	} >"$apt/private.sources"
	APT=(-o "Dir::Etc::SourceList=$apt/private.sources" -o "Dir::Etc::SourceParts=$apt/parts"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$apt/prefs"
		-o "Acquire::Languages=none" -o "APT::Sandbox::User=$(id -un)" -q)
	apt-get "${APT[@]}" update >"$apt/update.log" 2>&1 || unavailable "apt-get update of $SUITES failed (see $apt/update.log)"
}

for pkg in $(jq -r '.packages | keys[]' "$LOCK"); do
	ver=$(jq -r --arg p "$pkg" '.packages[$p].version' "$LOCK")
	file=$(jq -r --arg p "$pkg" '.packages[$p].file' "$LOCK")
	want=$(jq -r --arg p "$pkg" '.packages[$p].sha256' "$LOCK")
	out=$DIR/${pkg}_$ver
	[ -d "$out" ] && [ -f "$DIR/$file" ] && [ "$(sha256 "$DIR/$file")" = "$want" ] && continue
	if [ ! -f "$DIR/$file" ] || [ "$(sha256 "$DIR/$file")" != "$want" ]; then
		apt_private
		(cd "$DIR" && apt-get "${APT[@]}" download "$pkg=$ver") >"$DIR/.fetch.log" 2>&1 ||
			{ tail -n 5 "$DIR/.fetch.log" >&2; unavailable "apt-get download $pkg=$ver failed"; }
	fi
	got=$(sha256 "$DIR/$file")
	if [ "$got" != "$want" ]; then
		rm -f "$DIR/$file"
		say "error: $file has SHA-256 $got, packages.lock pins $want"
		exit 1
	fi
	tmp=$(mktemp -d "$DIR/.unpack.XXXXXX")
	dpkg-deb -x "$DIR/$file" "$tmp"
	rm -rf "$out"
	mv "$tmp/usr/lib/python3/dist-packages" "$out"
	rm -rf "$tmp"
	say "$pkg $ver: $out"
done
