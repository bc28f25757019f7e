# shellcheck shell=bash
# lib.sh: what build.sh and debpkgs.sh share: messages, hashing, steps and
# their stamps, the private apt view of a Debian suite, and inputs pinned by
# a lock file. Sourced, never run; the sourcing script sets ME (its name for
# messages) and, for steps and inputs, WORK, LOGS and DL.

say() { printf '%s: %s\n' "$ME" "$*" >&2; }
die() { say "error: $*"; exit 1; }
# unavailable: this machine cannot build or fetch (exit 3): callers may fall back.
unavailable() { say "unavailable: $*"; exit 3; }
notice() { printf '\n%s: NOTICE: %s\n\n' "$ME" "$*" >&2; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }
# key WORDS...: a short hash of everything a step's result depends on.
key() { printf '%s\n' "$@" | sha256sum | cut -c1-32; }

# step NAME FUNCTION...: run FUNCTION with its output in $LOGS/NAME.log, print
# the step's name and time, and the log's tail on failure. The step stops at
# its first failing command (set -e in the subshell: the caller's set +e, which
# lets this function collect the status, would otherwise hold there too); a
# command whose failure a step tolerates says so with `|| true`.
step() {
	local name=$1 start=$SECONDS rc
	shift
	printf '%s: %-22s' "$ME" "$name" >&2
	set +e
	(set -e; "$@") >"$LOGS/$name.log" 2>&1
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		printf 'FAILED (%ss)\n' $((SECONDS - start)) >&2
		say "last lines of $LOGS/$name.log:"
		tail -n 40 "$LOGS/$name.log" >&2
		exit "$rc"
	fi
	printf '%4ss\n' $((SECONDS - start)) >&2
}

# stamp_ok NAME KEY / stamp_set NAME KEY: a step's completion marker, holding
# the key (hash of everything the step's result depends on).
stamp_ok() { [ -f "$WORK/stamps/$1" ] && [ "$(cat "$WORK/stamps/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$WORK/stamps" && printf '%s\n' "$2" >"$WORK/stamps/$1"; }
stamp_clear() { rm -f "$WORK/stamps/$1"; }

# debian_mirror: the first URI of this machine's own Debian archive entry.
debian_mirror() {
	local f suites='^(bullseye|bookworm|trixie|forky|duke|stable|oldstable|testing|unstable|sid)$'
	{
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] && { cat "$f"; echo; }
		done
	} | awk -v RS='' -F'\n' -v want="$suites" '
		{
			types = ""; uris = ""; st = ""
			for (i = 1; i <= NF; i++) {
				line = $i
				if (line ~ /^[ \t]*#/) continue
				k = tolower(line); v = line; sub(/^[^:]*:[ \t]*/, "", v)
				if (k ~ /^types:/) types = v
				if (k ~ /^uris:/) uris = v
				if (k ~ /^suites:/) st = v
			}
			if (types !~ /(^|[ \t])deb([ \t]|$)/) next
			n = split(st, s, /[ \t]+/)
			for (j = 1; j <= n; j++) if (s[j] ~ want) { split(uris, u, /[ \t]+/); print u[1]; exit }
		}'
	if [ -r /etc/apt/sources.list ]; then
		awk -v want="$suites" '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) ~ want) { print $i; exit }
		}' /etc/apt/sources.list
	fi
}

APT=()
# apt_private DIR TYPES SUITES...: set APT to the options of a private apt
# view of SUITES (TYPES "deb" or "deb deb-src") with its state in DIR, which
# leaves the machine's own sources, lists, cache and preferences alone, and
# update it (once per process).
apt_private() {
	[ ${#APT[@]} -eq 0 ] || return 0
	local dir=$1 types=$2 mirror keyring=/usr/share/keyrings/debian-archive-keyring.gpg start=$SECONDS
	shift 2
	command -v apt-get >/dev/null || unavailable "apt-get is not installed"
	mirror=${WASMPY_DEBIAN_MIRROR:-$(debian_mirror | head -n 1)}
	[ -n "$mirror" ] || unavailable "no Debian mirror in /etc/apt sources (set WASMPY_DEBIAN_MIRROR)"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/prefs"
	{
		printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\n' "$types" "$mirror" "$*"
		[ -f "$keyring" ] && printf 'Signed-By: %s\n' "$keyring"
	} >"$dir/private.sources"
	local apt=(-o "Dir::Etc::SourceList=$dir/private.sources" -o "Dir::Etc::SourceParts=$dir/parts"
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$dir/prefs"
		-o "Acquire::Languages=none" -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
		-o "APT::Sandbox::User=$(id -un)" -o "APT::Get::Only-Source=true" -q)
	printf '%s: %-22s' "$ME" "apt update ($*)" >&2
	if ! apt-get "${apt[@]}" update >"$dir/update.log" 2>&1 ||
		grep -Eq '^(E: |W: Failed to fetch|W: GPG error)' "$dir/update.log"; then
		printf 'FAILED\n' >&2
		tail -n 20 "$dir/update.log" >&2
		unavailable "apt-get update of $* failed (see $dir/update.log)"
	fi
	printf '%4ss\n' $((SECONDS - start)) >&2
	APT=("${apt[@]}")
}

# newest VERSIONS...: the highest Debian version among the arguments.
newest() {
	local best='' v
	for v in "$@"; do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done
	printf '%s\n' "$best"
}

# available_versions TYPE PACKAGE: the versions the private view offers.
available_versions() {
	if [ "$1" = source ] || [ "$1" = debian ]; then
		apt-cache "${APT[@]}" showsrc "$2" 2>/dev/null | sed -n 's/^Version: //p'
	else
		apt-cache "${APT[@]}" madison "$2" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}'
	fi
}

# ---------------------------------------------------------------- pinned inputs

# Inputs are declared by the recipes (input NAME TYPE PACKAGE) and pinned in
# $LOCK under .inputs[NAME]: {package, type, version, file, sha256}. TYPE is
# "source" (the upstream tarball of a Debian source package), "debian" (the
# Debian tarball of one: debian/, its patches, which a recipe applies by name),
# "binary" (a Debian .deb) or "file" (a tarball in $WASMPY_SOURCES, which the lock entry's
# "from" says how to get).
INPUTS=()
declare -A IN_TYPE IN_PKG IN_VER IN_FILE IN_SHA IN_VARIANT
LOCK_STALE=
# input NAME TYPE PACKAGE [VARIANT]: VARIANT marks an input of one variant's
# recipe (its lock entry says so).
input() { INPUTS+=("$1"); IN_TYPE[$1]=$2; IN_PKG[$1]=$3; IN_VARIANT[$1]=${4:-}; }
# updating NAME: WASMPY_UPDATE_LOCK=1 re-pins NAME: any input when the default
# build runs, only its own when a variant's does (the inputs it shares stay
# as the default's build pinned them, which its outputs were made from).
updating() { [ "${WASMPY_UPDATE_LOCK:-}" = 1 ] && { [ "${VARIANT:-default}" = default ] || [ -n "${IN_VARIANT[$1]}" ]; }; }

lockq() { if [ -f "$LOCK" ]; then jq -r "$@" "$LOCK"; fi; }

# bad_input NAME FILE WHERE GOT WANT: the one-line refusal of a file that is
# not the pinned one.
bad_input() {
	die "$1: $2 has SHA-256 $4 but $(basename "$LOCK") pins $5; get the pinned file from $3"
}

# fetch NAME: bring the input into $DL, checked against the lock, and record
# its version, file and hash in IN_VER, IN_FILE, IN_SHA.
fetch() {
	local name=$1 type=${IN_TYPE[$1]} pkg=${IN_PKG[$1]} pver pfile psha ver file sha tmp vers where
	pver=$(lockq --arg n "$name" '.inputs[$n].version // empty')
	pfile=$(lockq --arg n "$name" '.inputs[$n].file // empty')
	psha=$(lockq --arg n "$name" '.inputs[$n].sha256 // empty')
	if ! updating "$name" && [ -n "$psha" ] && [ -f "$DL/$pfile" ] &&
		[ "$(sha256 "$DL/$pfile")" = "$psha" ]; then
		IN_VER[$name]=$pver IN_FILE[$name]=$pfile IN_SHA[$name]=$psha
		return 0
	fi
	if [ "$type" = file ]; then
		fetch_file "$name" "$pkg" "$pver" "$pfile" "$psha"
		return
	fi
	apt_private "$WORK/apt" "deb deb-src" "$SUITE"
	mapfile -t vers < <(available_versions "$type" "$pkg")
	[ "${#vers[@]}" -gt 0 ] || unavailable "$pkg is not in $SUITE on the mirror"
	if ! updating "$name" && [ -n "$pver" ] && printf '%s\n' "${vers[@]}" | grep -qxF -- "$pver"; then
		ver=$pver
	else
		ver=$(newest "${vers[@]}")
		if ! updating "$name"; then
			notice "$pkg ${pver:-(not pinned)} is no longer on the mirror; using the newest, $ver. Run WASMPY_UPDATE_LOCK=1 $0 OUTDIR to record it in the lock."
		fi
	fi
	tmp=$DL/tmp.$name
	rm -rf "$tmp" && mkdir -p "$tmp"
	if [ "$type" = source ] || [ "$type" = debian ]; then
		where="Debian $SUITE: apt-get source --download-only $pkg=$ver"
		# Only the tarball asked for is used (the upstream one, or the Debian
		# one): a mirror that lists a revision but lacks its .dsc still serves
		# them, checked below.
		local want='*.orig.tar.*'
		[ "$type" = source ] || want='*.debian.tar.*'
		(cd "$tmp" && apt-get "${APT[@]}" source --download-only "$pkg=$ver") >"$LOGS/fetch-$name.log" 2>&1 || true
		file=$(find "$tmp" -maxdepth 1 -name "$want" ! -name '*.asc' -printf '%f\n' | sort | head -n 1)
		[ -n "$file" ] || { tail -n 20 "$LOGS/fetch-$name.log" >&2; unavailable "apt-get source $pkg=$ver failed"; }
	else
		where="Debian $SUITE: apt-get download $pkg=$ver"
		(cd "$tmp" && apt-get "${APT[@]}" download "$pkg=$ver") >"$LOGS/fetch-$name.log" 2>&1 ||
			{ tail -n 20 "$LOGS/fetch-$name.log" >&2; unavailable "apt-get download $pkg=$ver failed"; }
		file=$(find "$tmp" -maxdepth 1 -name '*.deb' -printf '%f\n' | sort | head -n 1)
	fi
	[ -n "$file" ] || die "no file for $pkg=$ver in $tmp"
	sha=$(sha256 "$tmp/$file")
	if [ "$ver" = "$pver" ] && [ "$file" = "$pfile" ] && [ "$sha" != "$psha" ]; then
		rm -rf "$tmp"
		bad_input "$name" "$file" "$where" "$sha" "$psha"
	fi
	if [ "$file" != "$pfile" ] || [ "$sha" != "$psha" ]; then
		LOCK_STALE=1
		updating "$name" || notice "$name: $file ($sha) is not the locked input"
	elif [ "$ver" != "$pver" ]; then
		LOCK_STALE=1 # same upstream file under a new Debian revision
	fi
	mv -f "$tmp/$file" "$DL/$file"
	rm -rf "$tmp"
	IN_VER[$name]=$ver IN_FILE[$name]=$file IN_SHA[$name]=$sha
}

# sources_dir: where inputs of type "file" come from: $WASMPY_SOURCES, else
# ../shared/sources beside the checkout (the main checkout, for a git
# worktree, so every worktree of one repository finds the same directory;
# the checkout it was cloned from, for a clone of a local checkout that has
# none beside it, as `git clone . /tmp/fresh` makes).
sources_dir() {
	local root common origin
	if [ -n "${WASMPY_SOURCES:-}" ]; then
		printf '%s\n' "$WASMPY_SOURCES"
		return
	fi
	root=$(cd "$HERE/../.." && pwd)
	if common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
		root=$(dirname "$common")
		if [ ! -d "$(dirname "$root")/shared/sources" ] &&
			origin=$(git -C "$root" config --get remote.origin.url) && [ -d "$origin" ] &&
			common=$(git -C "$origin" rev-parse --path-format=absolute --git-common-dir 2>/dev/null) &&
			[ -d "$(dirname "$(dirname "$common")")/shared/sources" ]; then
			root=$(dirname "$common")
		fi
	fi
	printf '%s/shared/sources\n' "$(dirname "$root")"
}

# fetch_file NAME FILE VERSION LOCKED-FILE SHA: an input that is no Debian
# package: taken from sources_dir, never downloaded.
fetch_file() {
	local name=$1 file=${4:-$2} ver=$3 psha=$5 from dir sha
	dir=$(sources_dir)
	from=$(lockq --arg n "$name" '.inputs[$n].from // empty')
	from=${from:-the project that publishes $file}
	[ -d "$dir" ] || die "$name: source directory $dir does not exist: it must hold $file (SHA-256 ${psha:-not pinned}); set WASMPY_SOURCES to the directory that holds it; get it from $from"
	[ -f "$dir/$file" ] || die "$name: $dir/$file is missing (SHA-256 ${psha:-not pinned}); get it from $from"
	sha=$(sha256 "$dir/$file")
	if [ "$sha" != "$psha" ]; then
		updating "$name" || bad_input "$name" "$dir/$file" "$from" "$sha" "$psha"
		LOCK_STALE=1
	fi
	cp "$dir/$file" "$DL/$file.tmp" && mv -f "$DL/$file.tmp" "$DL/$file"
	IN_VER[$name]=$ver IN_FILE[$name]=$file IN_SHA[$name]=$sha
}
