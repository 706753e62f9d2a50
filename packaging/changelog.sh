#!/bin/bash
# debian/changelog for make deb, from the version the Makefile sets
# (DIAL9_VERSION) and the maintainer debian/control names, dated by the
# last commit (reproducible builds take SOURCE_DATE_EPOCH from it).
set -euo pipefail
ver=$1
cd "$(dirname "$0")/.."
maint=$(sed -n 's/^Maintainer: //p' debian/control)
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
cat <<END
dial9 ($ver) bookworm; urgency=medium

  * dial9 $ver, packaged from the source tree (make deb).

 -- $maint  $date
END
