# shellcheck shell=bash
# Shared by tests/packaging/*.sh (sourced): TAP-like lines, and the
# test program compiled through pkg-config.
ok() { echo "ok - $*"; }
fail() { echo "not ok - $*"; exit 1; }
# Files and links under a directory, one a line, relative, sorted.
files_under() { (cd "$1" && find . ! -type d | sed 's|^\./|/|' | sort); }
# The subcommands `dial9 --help` lists.
help_commands() { "$1" --help | sed -n 's/^  dial9 \([a-z][a-z]*\).*/\1/p' | sort -u; }
CC=${CC:-cc}
PROG_CFLAGS="-std=c11 -Wall -Wextra -Werror -O1"
# grep that reads all its input (grep -q may stop early, and the writer
# then dies of SIGPIPE, which pipefail reports as a failure).
has() { grep "$@" >/dev/null; }
