#!/bin/sh
# deploy/setup.sh installs the Debian packages the tests run against:
# postgresql (the PostgreSQL store's tests and the cluster test start a
# throwaway server from it) and haproxy (the cluster test's load balancer).
# Run by `make setup` (and so by `make test`). It installs with apt-get when
# run as root; otherwise it names what is missing and exits 3, and the tests
# that need it fail saying which package to install.
set -eu

missing=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing="$missing postgresql"
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing="$missing haproxy"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "setup: installing Debian packages:$missing"
	# Debian's postinst would start a system server; the tests start their own.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy"
		trap 'rm -f "$policy"' EXIT
	fi
	apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
	exit 0
fi
echo "setup: missing Debian packages:$missing (as root: apt-get install$missing); the tests that need them will fail"
exit 3
