#!/bin/sh
# SPDX-License-Identifier: MIT
# setup.sh - prepares Debian's Redmine for tests/redmine, once: installs
# it if missing (scripts/install-deps redmine), then makes under $STATE (default
# /var/cache/mwrap-attach/redmine):
#   instance/        a Redmine instance of ours (Debian's multi-instance
#                    layout, REDMINE_INSTANCE=mwrap-attach, reached through
#                    the link /var/lib/redmine/mwrap-attach): its own
#                    config, log and tmp, and a database.yml that waits
#                    for sqlite's lock and takes the database from
#                    MWRAP_REDMINE_DB
#   redmine.sqlite3  migrated and seeded (seed.rb), in WAL mode: each test
#                    run copies it and serves the copy
#   seed.txt         what the load needs: api_key= first_issue= ...
#   stamp            Redmine's version and these scripts' hashes
# A second run checks all of it and returns; a stale or broken state is
# made again.  Needs root.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
STATE=${MWRAP_REDMINE_STATE:-/var/cache/mwrap-attach/redmine}
INSTANCE=mwrap-attach
LINK=/var/lib/redmine/$INSTANCE
REDMINE=/usr/share/redmine

# Debian's packages, by install-deps' redmine group; only when missing,
# as every test run calls this too
for p in redmine redmine-sqlite puma; do
	case "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" in
	*" installed") ;;
	*) "$ROOT/scripts/install-deps" redmine; break ;;
	esac
done

stamp() {
	echo "redmine $(dpkg-query -W -f='${Version}' redmine)"
	(cd "$HERE" && sha256sum setup.sh seed.rb)
}

# Whether $STATE is what this script makes, and its database intact.
usable() {
	[ -f "$STATE/stamp" ] && [ "$(cat "$STATE/stamp")" = "$(stamp)" ] || return 1
	[ "$(readlink "$LINK")" = "$STATE/instance" ] || return 1
	[ -f "$STATE/seed.txt" ] && [ -f "$STATE/redmine.sqlite3" ] || return 1
	grep -q '^  timeout: 10000$' "$STATE/instance/config/database.yml" || return 1
	key=$(sed -n 's/.* api_key=\([0-9a-f]*\).*/\1/p' "$STATE/seed.txt")
	issues=$(sed -n 's/.* issues=\([0-9]*\).*/\1/p' "$STATE/seed.txt")
	[ -n "$key" ] && [ -n "$issues" ] || return 1
	[ "$(sqlite3 "$STATE/redmine.sqlite3" "PRAGMA quick_check; PRAGMA journal_mode;
		SELECT count(*) FROM issues;
		SELECT count(*) FROM tokens WHERE action = 'api' AND value = '$key';" |
		tr '\n' ' ')" = "ok wal $issues 1 " ]
}

if usable; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: need root to make $STATE and $LINK" >&2
	exit 1
fi
echo "setup.sh: preparing Redmine in $STATE" >&2
rm -rf "$STATE/instance" "$STATE/redmine.sqlite3" "$STATE/new.sqlite3" \
	"$STATE/seed.txt" "$STATE/stamp"
mkdir -p "$STATE"
for d in config log files tmp public/plugin_assets; do
	mkdir -p "$STATE/instance/$d"
done
# Debian's generated database.yml has no timeout: with two workers, a
# write then fails the other's requests with "database is locked".
# Redmine's Gemfile reads every instance's database.yml, so it must be
# valid without MWRAP_REDMINE_DB too.
cat >"$STATE/instance/config/database.yml" <<EOF
production:
  adapter: sqlite3
  database: <%= ENV.fetch("MWRAP_REDMINE_DB", "$STATE/redmine.sqlite3") %>
  timeout: 10000
  encoding: utf8
EOF
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$STATE/instance/config/secret_key.txt"
ln -sfn "$STATE/instance" "$LINK"

cd "$REDMINE"
export REDMINE_INSTANCE=$INSTANCE RAILS_ENV=production
export MWRAP_REDMINE_DB="$STATE/new.sqlite3"
log="$STATE/instance/log/setup.log"
if ! { bin/rake db:migrate &&
	REDMINE_LANG=en bin/rake redmine:load_default_data &&
	bin/rails runner "$HERE/seed.rb" >"$STATE/seed.txt"; } >"$log" 2>&1; then
	echo "setup.sh: Redmine's setup failed; its output is in $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
# WAL: Puma's workers read while another writes (a copy keeps the mode)
sqlite3 "$MWRAP_REDMINE_DB" 'PRAGMA journal_mode = WAL;' >/dev/null
mv "$MWRAP_REDMINE_DB" "$STATE/redmine.sqlite3"
stamp >"$STATE/stamp"
if ! usable; then
	echo "setup.sh: the state made in $STATE fails its check" >&2
	exit 1
fi
