#!/bin/bash
# Copy the source tree (what git tracks, plus new files it does not
# ignore; not build/, not node_modules/) into DEST, for make deb.
set -euo pipefail
dest=$1
cd "$(dirname "$0")/.."
if git rev-parse --show-toplevel >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			[ -e "$f" ] && printf '%s\0' "$f"
		done | tar --null -T - -cf - | tar -xf - -C "$dest"
else
	tar --exclude=./build --exclude=node_modules --exclude-vcs -cf - . |
		tar -xf - -C "$dest"
fi
