# users.bash - real second and third uids for the tests of sharing between
# users. Sourced after lib.bash. need_users N creates the users vkinrt1 to
# vkinrtN (useradd, system users without a home or a shell) when the test
# runs as root and they are missing, and exports their uids as VKINRT_UIDS
# (space separated); without root, useradd or setpriv it skips the whole
# plan and exits. open_to_users opens the test's folder and socket to them.
# Python reaches them through rpc.py's as_uid.

need_users() {
	local n=$1 i name uids=
	if [ "$(id -u)" != 0 ] || ! command -v useradd >/dev/null ||
		! command -v setpriv >/dev/null; then
		for i in $(seq 1 "$TAP_PLAN"); do
			echo "ok $i # SKIP needs root, useradd and setpriv for real second uids"
		done
		trap - EXIT; rm -rf "$T"; exit 0
	fi
	for i in $(seq 1 "$n"); do
		name=vkinrt$i
		if ! id -u "$name" >/dev/null 2>&1; then
			useradd --system --no-create-home --shell /usr/sbin/nologin \
				"$name" 2>/dev/null || id -u "$name" >/dev/null 2>&1 || {
				for j in $(seq 1 "$TAP_PLAN"); do
					echo "ok $j # SKIP useradd $name failed"
				done
				trap - EXIT; rm -rf "$T"; exit 0
			}
		fi
		uids="$uids${uids:+ }$(id -u "$name")"
	done
	export VKINRT_UIDS=$uids
}

open_to_users() {
	chmod 0711 "$T" && chmod 0666 "$SOCK"
}
