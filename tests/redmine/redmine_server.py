# SPDX-License-Identifier: MIT
"""Debian's Redmine under Puma for tests/redmine: setup.sh's prepared
state, our plugin installed for the run only, and a cluster serving a
fresh copy of the seeded database.  One run at a time: the plugin's
place and the instance's log and cache are shared.  (Not server.py:
tests/rails has one, and pytest imports both directories' helpers by
their bare names.)"""
import contextlib
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rails"))
sys.path.insert(0, os.path.join(HERE, ".."))
from conftest import run, scaled  # noqa: E402
from server import puma_serving, workers_of  # noqa: E402

REDMINE = "/usr/share/redmine"
SETUP = os.path.join(HERE, "setup.sh")
STATE = os.environ.get("MWRAP_REDMINE_STATE", "/var/cache/mwrap-attach/redmine")
INSTANCE = "mwrap-attach"          # setup.sh's Redmine instance
PLUGIN = os.path.join(HERE, "plugin")
PLUGINS = os.path.join(REDMINE, "plugins")
# where Redmine loads the plugin from, so where the report finds its lines
INSTALLED = os.path.join(PLUGINS, "mwrap_leak")
LEAK_RB = "lib/mwrap_leak.rb"      # the plugin's file with both caches
LOG = os.path.join(STATE, "instance", "log", "production.log")   # this run's


def redmine_missing():
    """Why the Redmine tests cannot run here, or None."""
    if os.environ.get("MWRAP_TEST_REDMINE") != "1":
        return "Redmine runs with MWRAP_TEST_REDMINE=1 (make test-redmine)"
    if not os.path.isfile(os.path.join(REDMINE, "config.ru")) or shutil.which("puma") is None:
        return "Redmine or Puma is not installed (scripts/install-deps redmine)"
    if os.geteuid() != 0:
        return f"needs root: setup.sh writes {STATE}, the plugin goes into {PLUGINS}"
    return None


def prepare():
    """Runs setup.sh (quick once its state is made): the seed's fields
    (api_key, issues, first_issue, last_issue, projects) as a dict."""
    p = run([SETUP], timeout=900)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(STATE, "seed.txt")) as f:
        return dict(w.split("=", 1) for w in f.read().split() if "=" in w)


def failed_requests(lines=40):
    """What this run's log says of its failed requests: each error's
    first LINES lines (Rails logs an exception's message, then its
    backtrace), "" when it says nothing."""
    with open(LOG, errors="replace") as f:
        log = f.read().splitlines()
    starts = [i for i, l in enumerate(log) if "Completed 5" in l or "Error" in l]
    return "\n".join("\n".join(log[i:i + lines]) for i in starts[:3])


@contextlib.contextmanager
def plugin_installed():
    """tests/redmine/plugin copied (not linked: its lines must be under
    Redmine's directory, as a real plugin's are) to INSTALLED, and removed
    afterwards with the plugins directory if this made it."""
    made = not os.path.isdir(PLUGINS)
    os.makedirs(PLUGINS, exist_ok=True)
    shutil.rmtree(INSTALLED, ignore_errors=True)   # a killed run's copy
    shutil.copytree(PLUGIN, INSTALLED)
    try:
        yield INSTALLED
    finally:
        shutil.rmtree(INSTALLED, ignore_errors=True)
        if made:
            os.rmdir(PLUGINS)


@contextlib.contextmanager
def environ(**values):
    """os.environ with VALUES set (Puma inherits them), then as it was."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def redmine_serving(tmp, bounded=0, workers=2, threads=4):
    """Redmine in production under a Puma cluster of WORKERS x THREADS on
    a free port of 127.0.0.1, with the plugin (its bounded cache holding
    BOUNDED entries, 0: off), serving a copy of the seeded database in
    TMP: (master pid, port, worker pids).  Nothing is left running."""
    db = os.path.join(tmp, "redmine.sqlite3")
    shutil.copyfile(os.path.join(STATE, "redmine.sqlite3"), db)
    # the instance's cache from an earlier run, and its log: this run's
    shutil.rmtree(os.path.join(STATE, "instance", "tmp", "cache"), ignore_errors=True)
    open(LOG, "w").close()
    env = environ(REDMINE_INSTANCE=INSTANCE, RACK_ENV="production",
                  RAILS_ENV="production", MWRAP_REDMINE_DB=db,
                  MWRAP_REDMINE_BOUNDED=str(bounded))
    with plugin_installed(), env, puma_serving(REDMINE, workers, threads,
                                               boot=scaled(180)) as (pid, port):
        yield pid, port, workers_of(pid)
