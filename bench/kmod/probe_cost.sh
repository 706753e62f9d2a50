#!/bin/bash
# The probe-cost benchmark (bench/kmod/probe_cost.c; not part of make
# test): a root ping-pong that no session records, beside 1 session of
# another user and beside USERS x SESSIONS more, in one boot of the VM
# under -icount with one vCPU (guest time = instructions executed, so the
# ratio of the two is meaningful; ../shared/NOTES-VM.md).  Run from the
# top of the tree, after make (the module) and make deps:
#
#   make bench-probe, or bench/kmod/probe_cost.sh [--module KO] [--kernel VMLINUZ] \
#       [USERS [SESSIONS [ROUNDS [REPS [occupants|busy]]]]]
#
# Defaults: 40 users x 50 sessions (2,001 sessions in all), 2,000 round
# trips, 3 runs each; "occupants": every session with DIAL9_CFG_OCCUPANTS;
# "busy": that, and a task of the first session waits on the CPU
# throughout (probe_cost.c says more).  --module another dial9.ko (an older one, built from
# git show HEAD:kmod/... in a scratch directory) for a before/after.
set -euo pipefail
module=dial9.ko
kernel=build/cache/vmlinuz-$(scripts/kver.sh)
while [ $# -gt 0 ]; do
	case "$1" in
	--module) module=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	*) break ;;
	esac
done
users=${1:-40} sessions=${2:-50} rounds=${3:-2000} reps=${4:-3} occ=${5:-}
out=build/bench-probe-cost
mkdir -p "$out"
bin=$out/dial9-probe-cost
cc -std=gnu11 -O2 -Wall -Wextra -Werror -Iuapi -Itests/kmod -static -pthread \
	-o "$bin" bench/kmod/probe_cost.c
make -s build/tests/vm/exit
set -o pipefail
DIAL9_VM_TIMEOUT=${DIAL9_VM_TIMEOUT:-1500} tests/vm/run.sh --kernel "$kernel" \
	--module "$module" --icount --smp 1 --mem 2048 --file "$bin" \
	--demo "dial9-probe-cost $users $sessions $rounds $reps $occ" \
	--out "$out/vm" | tr -d '\r' | grep -E '^PROBECOST|^uid|^vm:'
