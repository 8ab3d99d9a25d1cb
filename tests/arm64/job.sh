#!/bin/sh
# SPDX-License-Identifier: MIT
# job.sh - what `make test-arm64` runs inside the arm64 VM (scripts/arm64-vm
# runs it as root in a fresh copy of the tree): builds what builds on
# aarch64 today, runs the C unit tests and the pytest files that work
# there; with ARM64_RECORD_BUILD_SECONDS set above 0 in the guest, it then
# tries the whole `make build` for the record (what still fails is listed,
# and does not fail the job: preload/ is not ported yet; ~7 min, not in CI).
# Exit status: 0 when every required step passed.
set -u
export MWRAP_TEST_SLOW="${MWRAP_TEST_SLOW:-30}"
fail=0
step() {
	s=$(date +%s)
	echo "== arm64-job: $*"
	"$@"
	rc=$?
	echo "== arm64-job: exit $rc in $(($(date +%s) - s)) s: $*"
	[ "$rc" -eq 0 ] || fail=1
	return "$rc"
}
uname -m
# what works on aarch64 today
# (test_symtab needs tests/targets/statics and test_elfsym reads %fs: x86-64
# assembly; test_live and test_live_threads need preload/base/spin.h's x86
# pause; test_maps builds but its alarm(120) fires under TCG)
C_TESTS="build/tests/test_options build/tests/test_control"
step make -j2 build/bin/mwrap-inject $C_TESTS
for t in $C_TESTS; do
	step "$t"
done
step /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider tests/arm64
# the rest, for the record (bounded: slower than the rest under TCG)
record=${ARM64_RECORD_BUILD_SECONDS:-0}
if [ "$record" -gt 0 ]; then
	s=$(date +%s)
	timeout -k 10 "$record" make -k -j2 build >/tmp/build.log 2>&1
	echo "== arm64-job: make -k build: exit $? in $(($(date +%s) - s)) s; what fails:"
	grep -E '^make(\[[0-9]+\])?: \*\*\*|error:' /tmp/build.log | sort -u | head -40
fi
echo "== arm64-job: $( [ "$fail" -eq 0 ] && echo passed || echo FAILED)"
exit "$fail"
