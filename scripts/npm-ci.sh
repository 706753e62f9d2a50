#!/bin/sh
# scripts/npm-ci.sh DIR... - the npm packages each DIR's package-lock.json
# pins (tests/s3: the S3 test server; tests/fleet: DuckDB), installed
# with `npm ci` into DIR/node_modules unless its stamp is newer than
# DIR's package.json and package-lock.json: no npm run at all then.
# `make deps` and the Makefile's stamp rules (lib/lib.mk) call it.
set -eu

for d in "$@"; do
	stamp="$d/node_modules/.dial9-installed"
	if [ -f "$stamp" ] && [ "$stamp" -nt "$d/package.json" ] &&
		[ "$stamp" -nt "$d/package-lock.json" ]; then
		continue
	fi
	echo "deps: npm ci in $d"
	(cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
	touch "$stamp"
done
