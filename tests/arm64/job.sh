#!/bin/sh
# SPDX-License-Identifier: MIT
# job.sh - what `make test-arm64` runs inside the arm64 VM (dev/arm64-vm
# runs it as root in a fresh copy of the tree): builds the injector,
# libmwrap.so, the C unit tests and test_seccomp's targets, runs those,
# tests/arm64 (the injector's calls with both backends; libmwrap.so
# preloaded, and attached with both backends) and
# tests/container/test_seccomp.py (seccomp-filtered targets), the
# suite's core (CORE: Ruby lines, stacks, the safety matrix), then
# tests/arm64/test_lib.py, test_seccomp and the Ruby lines again on
# Debian 13 (a chroot: Ruby 3.3, glibc 2.41); with
# ARM64_RECORD_BUILD_SECONDS set above 0 in the guest, it then runs the
# whole `make build` for the record (what fails is listed, and does not
# fail the job; ~12 min at load, not in CI).
# Measured at host load 6-9: the build 463 s, check-hooks + check-layers
# 34 s, the C tests 20 s, tests/arm64 (11) 146 s.
# With the leaf check (host load ~2-3): the build 268 s, the C tests
# (with test_leaves) 20 s, tests/arm64 (14) 214 s; the run 585 s.
# With test_seccomp (host load ~5-9): the build (with sctarget
# and libsclog.so) 516 s, check-hooks + check-layers 41 s, the C tests
# 35 s, tests/arm64 (14) 304 s, tests/container/test_seccomp.py (25)
# 309 s; the run 1315 s from qemu's start (the job began at uptime 87 s).
# The Debian 13 chroot's test_lib (host load 7-13): 3 passed in 79 s.
# With the core (host load 5-7, beside a Ruby build and other tests): the
# build 385 s, tests/arm64 223 s, test_seccomp 227 s, the core (15) 317 s,
# the Debian 13 chroot (29) 277 s; the run 1542 s from qemu's start.
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
# the C unit tests but test_maps (it builds, but its alarm(120) fires
# under TCG)
C_TESTS="build/tests/test_options build/tests/test_control \
build/tests/test_elfsym build/tests/test_live build/tests/test_live_threads \
build/tests/test_symtab build/tests/test_ectls build/tests/test_leaves"
step make -j2 build/bin/mwrap-inject build/lib/libmwrap.so $C_TESTS \
	build/targets/sctarget build/targets/libsclog.so \
	build/targets/blocker build/targets/vecloop
# what the hooks import, and preload/'s layers, on this CPU's objects
step make check-hooks check-layers
for t in $C_TESTS; do
	step "$t"
done
step /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider tests/arm64
# seccomp-filtered targets: the syscalls an attach makes, the preflight's
# verdicts, denied calls (tests/container/sctarget.c)
step /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider \
	tests/container/test_seccomp.py
# the suite's core, as on the host: Ruby lines exact (3.1's frame reads:
# the frames test asserts they are ours),
# stacks preloaded and in the default window, and the safety matrix's
# blocked, vector and killed-injector cases once each
CORE="tests/test_ruby_versions.py::test_lines_exact_interpreted \
tests/test_ruby_versions.py::test_frames_read_by_us \
tests/test_ruby_versions.py::test_eval_with_a_file_name_inside_a_method \
tests/test_stacks.py::test_preload_stacks_with_mwrap_report \
tests/test_stacks.py::test_default_window_names_a_gems_callers_with_exact_lines \
tests/safety/test_matrix.py::test_blocked_in_a_syscall_keeps_working \
tests/safety/test_matrix.py::test_vector_registers \
tests/safety/test_matrix.py::test_injector_killed_mid_injection \
tests/safety/test_matrix.py::test_ruby_threads_raised_and_killed"
# shellcheck disable=SC2086 # CORE is a list of node ids
MWRAP_SAFETY_REPEAT=1 step /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider $CORE
# Ruby 3.2+ (its execution context through TLS) on aarch64: test_lib
# again in a chroot of Debian 13's userland, the guest's second disk
# (dev/arm64-vm), Ruby 3.3 and gdb 16 there, with this job's build;
# and test_seccomp against its glibc 2.41, whose threads start by clone3
# (Debian 12's arm64 2.36 makes clone alone); the frames test and a
# stacks test: 3.3's GET_EC() is a call there, which we follow to the EC
# (qemu-user cannot show it: it lacks process_vm_readv, with which the
# frames' layout is proven)
trixie() {
	t=/mnt/trixie
	mkdir -p "$t"
	mount /dev/vdb "$t" || return 1
	mount -t proc proc "$t/proc" && mount --rbind /dev "$t/dev" &&
		mount --rbind /sys "$t/sys" && mount --bind /root/src "$t/root/src" &&
		chroot "$t" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 MWRAP_TEST_SLOW="$MWRAP_TEST_SLOW" \
			sh -c 'cd /root/src && ruby -v && /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider \
				tests/arm64/test_lib.py tests/container/test_seccomp.py \
				tests/test_ruby_versions.py::test_lines_exact_interpreted \
				tests/test_ruby_versions.py::test_frames_read_by_us \
				tests/test_stacks.py::test_preload_stacks_with_mwrap_report'
	rc=$?
	umount -lR "$t" || true
	return "$rc"
}
step trixie
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
