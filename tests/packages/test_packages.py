# SPDX-License-Identifier: MIT
"""make test-packages: the gem and the Debian package, each
installed in a fresh minimal Debian root (dev/debian-root's package
roots: minbase and only what the install needs, a throwaway overlay per
test), give commands that attach to a Ruby service and name its leaking
line (attach_check.rb); lintian finds no error in the .deb."""
import os
import signal
import subprocess

import pytest

from conftest import ROOT, during_window, ptrace_allowed, run, start_ready

MUSL_CLEAK = os.path.join(ROOT, "build", "musl", "targets", "cleak")

pytestmark = pytest.mark.skipif(
    os.environ.get("MWRAP_TEST_PACKAGES") != "1",
    reason="needs the built packages and debootstrap roots: make test-packages")

with open(os.path.join(ROOT, "VERSION")) as f:
    VERSION = f.read().strip()
PKG = os.path.join(ROOT, "build", "pkg")
GEM = f"mwrap-attach-{VERSION}.gem"
DEB = "mwrap-attach_{}_{}.deb".format(
    VERSION, subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                            text=True).stdout.strip())

# each command answers --version with its name and VERSION
VERSIONS = "for c in mwrap-attach mwrap mwrap-report; do " \
           f'[ "$($RUN $c --version)" = "$c {VERSION}" ]; done\n'
# mwrap traces from the start: a dump at exit names the -e line
PRELOAD = ("MWRAP=dump_path:/tmp/dump $RUN mwrap ruby -e 'KEEP = \"x\" * 100_000'\n"
           "grep -- ' -e:1$' /tmp/dump\n")
ATTACH = "ruby /src/tests/packages/attach_check.rb $RUN mwrap-attach\n"


def in_root(name, script, timeout=600):
    """Runs sh -eux SCRIPT as root in a fresh overlay of package root
    NAME, /pkg holding the packages: (exit status, output).  Past the
    timeout its process group gets SIGTERM (debian-root then removes its
    overlay), SIGKILL 10 s later, and the test fails."""
    p = subprocess.Popen([os.path.join(ROOT, "dev", "debian-root"), name,
                          "sh", "-eux", "-c", script],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, _ = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
        pytest.fail(f"{name}: still running after {timeout} s:\n{out[-4000:]}")
    print(out[-3000:])
    return p.returncode, out


def in_root_ok(name, script, timeout=600):
    status, out = in_root(name, script, timeout)
    assert status == 0, f"{name}: exit {status}:\n{out[-6000:]}"
    return out


@pytest.mark.parametrize("release", ["bookworm", "trixie"])
def test_gem_install_gives_working_commands(release):
    """gem install --local builds the gem against the root's liburcu and
    Ruby (3.1, 3.3); its mwrap-attach names the leaking line, mwrap
    traces, and `require "mwrap"` finds the extension."""
    out = in_root_ok(f"gem-{release}", "cd /tmp\nRUN=\n"
                     f"gem install --local --no-document /pkg/{GEM}\n"
                     + VERSIONS + ATTACH + PRELOAD +
                     "ruby -e 'gem \"mwrap-attach\"; require \"mwrap\"; "
                     f"print Mwrap::VERSION' | grep -x {VERSION}\n")
    assert "attach_check: mwrap-attach named leak.rb:" in out


@pytest.mark.parametrize("release", ["bookworm", "trixie"])
def test_bundle_exec_from_vendor_cache(release):
    """A Gemfile naming the gem, the .gem in vendor/cache: bundle install
    --local (Ruby's own bundler: bundle3.x, or Debian's bundle) installs
    it into vendor/bundle with no network, and bundle exec mwrap-attach
    names the leaking line."""
    out = in_root_ok(f"gem-{release}", f"""
mkdir -p /tmp/app/vendor/cache
cd /tmp/app
cp /pkg/{GEM} vendor/cache/
printf 'source "https://rubygems.org"\\ngem "mwrap-attach", require: false\\n' >Gemfile
bundle=bundle$(ruby -e 'print RbConfig::CONFIG["ruby_install_name"].delete_prefix("ruby")')
! command -v bundle || bundle=bundle
$bundle config set --local path vendor/bundle
$bundle install --local
! command -v mwrap-attach
RUN="$bundle exec"
""" + VERSIONS + ATTACH)
    assert "exec mwrap-attach named leak.rb:" in out


@pytest.mark.skipif(not os.path.exists(MUSL_CLEAK), reason="no musl build: make build-musl")
def test_the_installed_gem_attaches_to_a_musl_program(spawn, tmp):
    """gem install on this (glibc) machine: the gem's musl build, made
    before make gem, is what its mwrap-attach loads into a musl program
    (a musl Ruby is tests/musl's; here musl-gcc's C program)."""
    why = ptrace_allowed()
    if why:
        pytest.skip(why)
    home = tmp / "gems"
    p = run(["gem", "install", "--local", "--no-document", "--install-dir", str(home),
             os.path.join(PKG, GEM)], timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    gem_dir = home / "gems" / f"mwrap-attach-{VERSION}"
    said = (home / "extensions").glob(f"*/*/mwrap-attach-{VERSION}/gem_make.out")
    assert "carries the musl build" in next(said).read_text()
    musl_lib = f"{gem_dir}/build/musl/lib/libmwrap.so"
    t, _ = start_ready(spawn, [MUSL_CLEAK])
    code, out, err = during_window(["env", f"GEM_HOME={home}", f"GEM_PATH={home}",
                                    str(home / "bin" / "mwrap-attach"), "-p", str(t.pid), "-d", "1"],
                                   t.pid, lambda: (t.send("leak 10 1000"), t.expect("leaked 10")))
    assert code == 0, err
    assert "(leak_here+0x" in out, out
    assert musl_lib in open(f"/proc/{t.pid}/maps").read()
    assert t.finish()[0] == 0


def test_gem_install_names_the_missing_packages():
    """Without make, liburcu-dev and ruby-dev the install stops before
    building and names the packages to install."""
    status, out = in_root("gem-bookworm", f"""
dpkg --purge --force-depends make liburcu-dev ruby-dev \
    $(dpkg-query -W -f '${{Package}}\\n' 'ruby3.*-dev')
cd /tmp
gem install --local --no-document /pkg/{GEM}
""")
    assert status != 0
    assert "mwrap-attach: cannot build: missing make, liburcu" in out, out
    assert "mwrap-attach:   apt-get install make liburcu-dev ruby-dev\n" in out, out


def release():
    with open("/etc/os-release") as f:
        return dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l) \
            .get("VERSION_CODENAME", "").strip('"')


def test_deb_installs_working_commands_and_man_pages():
    """apt-get install ./mwrap-attach_VERSION_ARCH.deb (no Recommends)
    in a minimal Debian 12 root brings what it depends on; then man
    shows each command's page, mwrap-attach names the leaking line,
    mwrap traces and ruby -rmwrap loads the extension."""
    if release() != "bookworm":
        pytest.skip(f"make deb built the .deb for this machine's release "
                    f"({release() or 'unknown'}); the deb root is Debian 12")
    out = in_root_ok("deb-bookworm", "cd /tmp\nRUN=\n"
                     "DEBIAN_FRONTEND=noninteractive apt-get install -y "
                     f"--no-install-recommends /pkg/{DEB}\n"
                     "for p in mwrap-attach mwrap mwrap-report mwrap-inject; do "
                     "MANPAGER=cat man $p | grep -q SYNOPSIS; done\n"
                     + VERSIONS + ATTACH + PRELOAD +
                     f"ruby -rmwrap -e 'print Mwrap::VERSION' | grep -x {VERSION}\n")
    assert "attach_check: mwrap-attach named leak.rb:" in out


def test_lintian_finds_no_error():
    p = subprocess.run(["lintian", "--fail-on", "error", os.path.join(PKG, DEB)],
                       capture_output=True, text=True, timeout=300)
    print(p.stdout)
    assert p.returncode == 0, p.stdout + p.stderr
    assert " E: " not in p.stdout and not p.stdout.startswith("E: ")


def test_packaged_library_imports_only_allowed_functions(tmp_path):
    """libmwrap.so as Debian's flags build it passes dev/check-imports."""
    subprocess.run(["dpkg-deb", "-x", os.path.join(PKG, DEB), str(tmp_path)],
                   check=True, timeout=60)
    p = subprocess.run([os.path.join(ROOT, "dev", "check-imports"),
                        str(tmp_path / "usr/lib/mwrap-attach/libmwrap.so")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_make_deb_in_fresh_roots():
    """make deb on a fresh Debian 12 and a fresh Debian 13 (minbase with
    make, gcc and git, as the README's machines are), side by side (most
    of each is apt's downloads): it installs what it builds with
    (debhelper, build-essential) and makes the .deb of the root's
    architecture."""
    import concurrent.futures
    script = "cd /src && make deb && ls build/pkg/mwrap-attach_*.deb\n"
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                          text=True).stdout.strip()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {r: pool.submit(in_root, r, script, 1200) for r in ("bookworm", "trixie")}
        for root, run in runs.items():
            status, out = run.result()
            assert status == 0, f"{root}: exit {status}:\n{out[-6000:]}"
            assert f"build/pkg/mwrap-attach_{VERSION}_{arch}.deb" in out, out[-2000:]
