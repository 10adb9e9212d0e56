# shellcheck shell=bash
# Sourced by the scripts in this directory: where things live, progress lines for long work, and
# the Python environments. Nothing here runs on its own.

KGF_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Built binaries and the full logs of every build; shared by all checkouts on the machine. Exported:
# the TypeScript consumer of the tests and benchmarks keeps its npm installs there (tests/integration/consumers.py).
export KGF_CACHE=${KGF_CACHE:-$HOME/.cache/kai-gpu-fractions}
# This checkout's own state: control planes, the local stack's backend, links to its virtualenvs.
KGF_STATE_DIR=${KGF_STATE_DIR:-$KGF_REPO/.state}
KGF_PYTHON=$(command -v python3.11 || command -v python3)

# say TEXT: one progress line on stderr, prefixed with the calling script's name.
say() { printf '[%s] %s\n' "${KGF_SCRIPT:-${0##*/}}" "$*" >&2; }

# minutes SECONDS: "42s" or "3 min 5s".
minutes() { (($1 < 60)) && echo "${1}s" || echo "$(($1 / 60)) min $(($1 % 60))s"; }

# phase STEP WHAT TYPICAL LOG COMMAND...: runs one long step of a cold build with all its output in
# LOG. Prints a line when it starts (which step of how many, e.g. "2/3", what, how long it usually
# takes, the log), one every two minutes while it runs, and one when it ends; on failure, the end of
# the log.
phase() {
	local step="[$1] " what=$2 typical=$3 log=$4 start=$SECONDS status=0 ticker
	shift 4
	[[ $step != "[] " ]] || step=
	mkdir -p "$(dirname "$log")"
	printf '\n== %s\n' "$(date -u +%FT%TZ) $what" >>"$log"
	say "$step$what: started (usually $typical on 2 cores; full log: $log)"
	# The ticker sleeps in the background and waits for it: a TERM then ends it at once, where a
	# foreground sleep would hold it (and the caller's `wait`) for up to two more minutes.
	(
		trap 'kill "$nap" 2>/dev/null; exit 0' TERM
		while :; do
			sleep 120 &
			nap=$!
			wait "$nap"
			say "$step$what: $(minutes $((SECONDS - start))) so far"
		done
	) &
	ticker=$!
	"$@" >>"$log" 2>&1 </dev/null || status=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	if ((status != 0)); then
		tail -n 25 "$log" >&2
		say "$step$what: FAILED after $(minutes $((SECONDS - start))) (full log: $log)"
		return "$status"
	fi
	say "$step$what: done in $(minutes $((SECONDS - start)))"
}

# make_venv VENV REQUIREMENT_FILE...: a new virtualenv with the requirements installed.
make_venv() {
	local venv=$1
	shift
	rm -rf "$venv"
	"$KGF_PYTHON" -m venv "$venv"
	"$venv/bin/pip" install --disable-pip-version-check --progress-bar off "${@/#/--requirement=}"
}

# ensure_venv VENV REQUIREMENT_FILE...: VENV as a link to a virtualenv in the cache, made once for
# each Python and set of requirements (by their hash) and shared by every checkout on the machine,
# so a fresh clone makes none. Nothing installs into one after it is made. A VENV that is a
# directory of its own (made by hand, or by an older checkout) is replaced by the link.
ensure_venv() {
	local venv=$1 name=${1##*/} stamp cached
	name=${name#.}
	stamp=$({ "$KGF_PYTHON" -VV; cat "${@:2}"; } | sha256sum | cut -c1-16)
	cached=$KGF_CACHE/venvs/$name-$stamp
	mkdir -p "$KGF_CACHE/venvs"
	(
		# Two checkouts making the same one at once: the second waits, then finds it made.
		flock 9
		[[ -f $cached/.requirements ]] && exit 0
		phase "" "Python environment ${venv#"$KGF_REPO"/}" "1-2 min" "$KGF_CACHE/logs/venv-$name.log" \
			make_venv "$cached" "${@:2}"
		echo "$stamp" >"$cached/.requirements"
	) 9>"$KGF_CACHE/venvs/.lock"
	[[ -L $venv || ! -e $venv ]] || rm -rf "$venv"
	ln -sfn "$cached" "$venv"
}

# ensure_engine_venv: the virtualenv the Pulumi engine runs the program and the policy pack in.
# It holds the program's and the pack's requirements, as a user's .venv does. The Python host asks
# for the plugin of every installed Pulumi SDK: scripts/toolchain.sh installs them (stand-ins for
# pulumi-command and pulumi-docker).
ensure_engine_venv() {
	mkdir -p "$KGF_STATE_DIR"
	ensure_venv "$KGF_STATE_DIR/engine-venv" "$KGF_REPO/requirements.txt" "$KGF_REPO/policy/requirements.txt"
	# policy/PulumiPolicy.yaml runs the pack in policy/venv.
	ln -sfn "$KGF_STATE_DIR/engine-venv" "$KGF_REPO/policy/venv"
}
