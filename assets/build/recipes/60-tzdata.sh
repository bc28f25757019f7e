# shellcheck shell=bash
# Zone data for zoneinfo: Debian's tzdata and tzdata-legacy binary packages
# (the second holds the backward-compatible names such as US/Eastern), laid
# out as the `tzdata` package PyPI ships (tzdata/zoneinfo/<key>, an
# __init__.py in every directory for importlib.resources, tzdata/zones) and
# added to python313.zip, where zoneinfo looks when the guest has no
# /usr/share/zoneinfo.

input tzdata binary tzdata
input tzdata-legacy binary tzdata-legacy
recipe tzdata

tzdata() {
	local k
	k=$(key "${IN_SHA[tzdata]}" "${IN_SHA[tzdata-legacy]}" "$(declare -f make_tzdata)")
	if ! stamp_ok tzdata "$k"; then
		step tzdata make_tzdata
		stamp_set tzdata "$k"
	fi
	ZIP_ARGS+=(--tree "$WORK/tzdata/pkg")
}

make_tzdata() {
	rm -rf "$WORK/tzdata" && mkdir -p "$WORK/tzdata/deb" "$WORK/tzdata/pkg"
	dpkg-deb -x "$DL/${IN_FILE[tzdata]}" "$WORK/tzdata/deb"
	dpkg-deb -x "$DL/${IN_FILE[tzdata-legacy]}" "$WORK/tzdata/deb"
	"$BUILD_PY" -I - "$WORK/tzdata/deb/usr/share/zoneinfo" "$WORK/tzdata/pkg/tzdata" <<'PY'
import os, re, sys
src, out = sys.argv[1:]
zones = []
for root, dirs, files in os.walk(src):
    rel = os.path.relpath(root, src)
    dirs[:] = sorted(d for d in dirs if not (rel == "." and d == "right"))
    for name in sorted(files):
        key = os.path.normpath(os.path.join(rel, name))
        path = os.path.realpath(os.path.join(root, name))
        if key in ("localtime", "posixrules") or not path.startswith(os.path.realpath(src) + os.sep):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] == b"TZif":
            zones.append(key)
            os.makedirs(os.path.join(out, "zoneinfo", os.path.dirname(key)), exist_ok=True)
            with open(os.path.join(out, "zoneinfo", key), "wb") as f:
                f.write(data)
version = re.match(r"# version (\d{4})([a-z])$", open(os.path.join(src, "tzdata.zi")).readline().strip())
for root, dirs, files in os.walk(out):
    open(os.path.join(root, "__init__.py"), "w").close()
with open(os.path.join(out, "__init__.py"), "w") as f:
    f.write(f'# IANA tz {version.group(1)}{version.group(2)}, from Debian\'s tzdata and tzdata-legacy packages.\n'
            f'__version__ = "{version.group(1)}.{ord(version.group(2)) - ord("a") + 1}"\n'
            f'IANA_VERSION = "{version.group(1)}{version.group(2)}"\n')
with open(os.path.join(out, "zones"), "w") as f:
    f.write("".join(z + "\n" for z in sorted(zones)))
print(f"tzdata {version.group(1)}{version.group(2)}: {len(zones)} zones")
PY
}
