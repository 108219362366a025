#!/usr/bin/env bash
# Runs a 4-rank job as two hosts on this machine: network namespaces
# nodeA (10.213.N.1) and nodeB (10.213.N.2) joined by a veth pair, each
# with its own host name (a UTS namespace), two ranks in each, the store
# on nodeA's address. No rank shares a loopback with a rank of the other
# node, and nothing sets WEFT_GLOO_HOST: each rank finds the address to
# bind from its route to MASTER_ADDR.
#
# usage: two_nodes.sh OUT run|cut WEFT-RUN-ARGS...
#   run: the job runs to the end; each rank's stderr in OUT/rank<R>.err.
#   cut: once rank 0 has logged two steps (--metrics must be OUT/m.jsonl),
#        nodeA's end of the link goes down; each rank's exit status goes
#        into OUT/rank<R>.rc.
# Needs root (ip netns, unshare); lit runs it only with feature netns.
set -u
out=$1 mode=$2
shift 2
net=$(( ($$ % 200) + 20 ))
A=weftA$$ B=weftB$$ VA=wa$$ VB=wb$$
cleanup() {
  # No rank outlives the test, nor a namespace or link.
  kill $(jobs -p) 2>/dev/null
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  ip link del "$VA" 2>/dev/null
}
trap cleanup EXIT
ip netns add "$A" && ip netns add "$B" || exit 2
ip link add "$VA" type veth peer name "$VB" || exit 2
ip link set "$VA" netns "$A" && ip link set "$VB" netns "$B" || exit 2
ip -n "$A" addr add "10.213.$net.1/24" dev "$VA"
ip -n "$B" addr add "10.213.$net.2/24" dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up && ip -n "$B" link set "$VB" up || exit 2

rank() { # NS HOSTNAME RANK LOCAL_RANK
  timeout 300 ip netns exec "$1" unshare --uts env RANK="$3" WORLD_SIZE=4 \
    LOCAL_RANK="$4" \
    MASTER_ADDR="10.213.$net.1" MASTER_PORT=29555 \
    sh -c 'hostname "$0" && exec "$@"' "$2" weft-run "${@:5}" \
    2> "$out/rank$3.err"
  echo $? > "$out/rank$3.rc"
}
rank "$A" nodeA 0 0 "$@" &
rank "$A" nodeA 1 1 "$@" &
rank "$B" nodeB 2 0 "$@" &
rank "$B" nodeB 3 1 "$@" &
if [ "$mode" = cut ]; then
  for _ in $(seq 600); do
    [ "$(wc -l < "$out/m.jsonl" 2>/dev/null || echo 0)" -ge 2 ] && break
    sleep 0.1
  done
  ip -n "$A" link set "$VA" down
fi
wait
