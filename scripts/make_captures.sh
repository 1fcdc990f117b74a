#!/usr/bin/env bash
# Make the real-TCP captures of sim/captures/ (run as root: `make captures`).
#
# Three network namespaces made here and removed on any exit (also on failure
# or Ctrl-C):
#
#   <p>-lan (client, "the LAN")  lan0 ---- rlan  <p>-rtr ("the modem")  rwan ---- wan0  <p>-srv (server)
#
# The router namespace shapes both directions with tbf (a slow uplink
# rwan -> server, a faster downlink rlan -> client), drops, duplicates and
# CE-marks downlink packets with nftables, and tcpdump captures what the
# client sends into the router (`-Q in` on rlan): the client's ACKs of its
# downloads, its upload data, ARP/NDP, iperf3's control connections. That is
# what the ackfilter core sees on its LAN port. Offloads are off on every veth
# and VLAN device, so every frame is at most 1514 bytes and carries its real
# checksums. Traffic only flows between the namespaces made here.
#
# TCP is Linux's own, CUBIC picked per socket (iperf3 -C cubic); classic ECN
# (net.ipv4.tcp_ecn=1) in the ECN scenario.
#
# Env: OUT=dir (default sim/captures), SECONDS_PER_SCENARIO (default 15),
# KEEP_RAW=1 keeps the uncompressed pcaps in build/captures/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/sim/captures}"
DURATION="${SECONDS_PER_SCENARIO:-15}"
RAW="$ROOT/build/captures"
P="afcap$$"
LAN="$P-lan"; RTR="$P-rtr"; SRV="$P-srv"

say() { printf 'make_captures: %s\n' "$*" >&2; }
die() { printf 'make_captures: ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc, nftables): sudo make captures"

# --- tools ---------------------------------------------------------------------
need=()
for tool in iperf3:iperf3 tcpdump:tcpdump nft:nftables ethtool:ethtool ip:iproute2 tc:iproute2; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool##*:}")
done
if [ "${#need[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 || die "missing: ${need[*]} (and no apt-get to install them)"
    say "apt-get install -y ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- cleanup, always -------------------------------------------------------------
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for ns in "$LAN" "$RTR" "$SRV"; do
        if ip netns list 2>/dev/null | grep -qw "$ns"; then
            # Only the processes started inside our own namespaces.
            for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        fi
    done
    sleep 0.5
    for ns in "$LAN" "$RTR" "$SRV"; do
        if ip netns list 2>/dev/null | grep -qw "$ns"; then
            for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    { wait; } 2>/dev/null || true     # reap the relays quietly
    [ "$rc" = 0 ] || say "failed (exit $rc); namespaces removed"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

offloads_off() {  # ns dev: no TSO/GSO/GRO/LRO, software checksums, VLAN tags inline
    local ns="$1" dev="$2" f
    for f in tso gso gro lro tx rx sg txvlan rxvlan tx-gso-partial; do
        in_ns "$ns" ethtool -K "$dev" "$f" off >/dev/null 2>&1 || true
    done
    in_ns "$ns" ethtool -k "$dev" | grep -Eq '^tcp-segmentation-offload: on|^generic-segmentation-offload: on|^generic-receive-offload: on|^tx-checksumming: on' \
        && die "offloads still on for $dev in $ns"
    return 0
}

# --- topology ----------------------------------------------------------------------
setup() {
    say "namespaces $LAN, $RTR, $SRV"
    ip netns add "$LAN"; ip netns add "$RTR"; ip netns add "$SRV"
    ip link add lan0 netns "$LAN" type veth peer name rlan netns "$RTR"
    ip link add wan0 netns "$SRV" type veth peer name rwan netns "$RTR"
    # Fixed MACs: the captures do not depend on the machine.
    in_ns "$LAN" ip link set lan0 address 02:00:00:00:01:02
    in_ns "$RTR" ip link set rlan address 02:00:00:00:01:01
    in_ns "$RTR" ip link set rwan address 02:00:00:00:02:01
    in_ns "$SRV" ip link set wan0 address 02:00:00:00:02:02
    for ns in "$LAN" "$RTR" "$SRV"; do in_ns "$ns" ip link set lo up; done
    for ns_dev in "$LAN:lan0" "$RTR:rlan" "$RTR:rwan" "$SRV:wan0"; do
        offloads_off "${ns_dev%%:*}" "${ns_dev##*:}"
        in_ns "${ns_dev%%:*}" ip link set "${ns_dev##*:}" up
    done
    # VLAN 100 (802.1Q) and QinQ (802.1ad 10 outside 802.1Q 200) on the LAN link.
    # This kernel has no 802.1Q module: scripts/vlan_relay.py plays the VLAN
    # subinterface (a TAP device whose frames leave the parent tagged).
    for spec in "$LAN:vlan100:lan0:8100:100" "$LAN:qinq200:lan0:88a8:10,8100:200" \
                "$RTR:vlan100:rlan:8100:100" "$RTR:qinq200:rlan:88a8:10,8100:200"; do
        IFS=: read -r ns tap parent tags <<<"$spec"
        ip netns exec "$ns" python3 "$ROOT/scripts/vlan_relay.py" "$tap" "$parent" "$tags" >/dev/null &
        disown "$!"      # ended by the cleanup with the namespace's other processes
    done
    for ns_dev in "$LAN:vlan100" "$LAN:qinq200" "$RTR:vlan100" "$RTR:qinq200"; do
        for _ in $(seq 50); do in_ns "${ns_dev%%:*}" ip link show "${ns_dev##*:}" >/dev/null 2>&1 && break; sleep 0.1; done
        offloads_off "${ns_dev%%:*}" "${ns_dev##*:}"
        in_ns "${ns_dev%%:*}" ip link set "${ns_dev##*:}" up
    done
    # The tags must fit in the parent's 1514-byte frames (as a PPPoE link's 1492).
    for ns in "$LAN" "$RTR"; do
        in_ns "$ns" ip link set vlan100 mtu 1496
        in_ns "$ns" ip link set qinq200 mtu 1492
    done
    in_ns "$LAN" ip link set lan0 promisc on
    in_ns "$RTR" ip link set rlan promisc on
    # Addresses (documentation-style private ranges inside the namespaces only).
    in_ns "$LAN" ip addr add 10.77.1.2/24 dev lan0
    in_ns "$LAN" ip addr add fd77:1::2/64 dev lan0 nodad
    in_ns "$LAN" ip addr add 10.77.100.2/24 dev vlan100
    in_ns "$LAN" ip addr add 10.77.200.2/24 dev qinq200
    in_ns "$RTR" ip addr add 10.77.1.1/24 dev rlan
    in_ns "$RTR" ip addr add fd77:1::1/64 dev rlan nodad
    in_ns "$RTR" ip addr add 10.77.100.1/24 dev vlan100
    in_ns "$RTR" ip addr add 10.77.200.1/24 dev qinq200
    in_ns "$RTR" ip addr add 10.77.2.1/24 dev rwan
    in_ns "$RTR" ip addr add fd77:2::1/64 dev rwan nodad
    in_ns "$SRV" ip addr add 10.77.2.2/24 dev wan0
    in_ns "$SRV" ip addr add fd77:2::2/64 dev wan0 nodad
    in_ns "$LAN" ip route add default via 10.77.1.1
    in_ns "$LAN" ip -6 route add default via fd77:1::1
    # VLAN subnets route to the server through their own gateway (source-based).
    in_ns "$LAN" ip route add 10.77.2.0/24 via 10.77.100.1 table 100
    in_ns "$LAN" ip rule add from 10.77.100.2 table 100
    in_ns "$LAN" ip route add 10.77.2.0/24 via 10.77.200.1 table 200
    in_ns "$LAN" ip rule add from 10.77.200.2 table 200
    in_ns "$SRV" ip route add default via 10.77.2.1
    in_ns "$SRV" ip -6 route add default via fd77:2::1
    in_ns "$RTR" sysctl -qw net.ipv4.ip_forward=1
    in_ns "$RTR" sysctl -qw net.ipv6.conf.all.forwarding=1
    for ns in "$LAN" "$SRV"; do in_ns "$ns" sysctl -qw net.ipv4.tcp_sack=1 net.ipv4.tcp_timestamps=1; done
    # iperf3 servers, one per concurrent test.
    for port in 5201 5202 5203 5204 5205 5206; do
        in_ns "$SRV" iperf3 -s -p "$port" -D --logfile /dev/null
    done
    sleep 0.5
}

# shape DOWN_RATE UP_RATE: tbf towards the client (downlink) and the server (uplink);
# the bursts (bytes) hold at least one full frame, or tbf drops every full frame.
shape() {
    in_ns "$RTR" tc qdisc replace dev rlan root tbf rate "$1" burst 8192 latency 60ms
    in_ns "$RTR" tc qdisc replace dev rwan root tbf rate "$2" burst 3200 latency 200ms
}

# impair LOSS_PERMILLE DUP_PERMILLE CE_PERCENT: downlink TCP segments with payload
# (server -> client) dropped, duplicated (-> D-SACK), or CE-marked when ECT.
impair() {
    local loss="$1" dup="$2" ce="$3"
    in_ns "$RTR" nft -f - <<EOF
flush ruleset
table ip impair4 {
    chain impair_forward {
        type filter hook forward priority 0; policy accept;
        iifname "rwan" ip protocol tcp numgen random mod 1000 < $loss drop
        iifname "rwan" ip protocol tcp ip length > 100 numgen random mod 1000 < $dup dup to 10.77.1.2 device "rlan"
        iifname "rwan" ip ecn ect0 numgen random mod 100 < $ce ip ecn set ce
        iifname "rwan" ip ecn ect1 numgen random mod 100 < $ce ip ecn set ce
    }
}
table ip6 impair6 {
    chain impair_forward {
        type filter hook forward priority 0; policy accept;
        iifname "rwan" meta l4proto tcp numgen random mod 1000 < $loss drop
        iifname "rwan" meta l4proto tcp ip6 length > 100 numgen random mod 1000 < $dup dup to fd77:1::2 device "rlan"
        iifname "rwan" ip6 ecn ect0 numgen random mod 100 < $ce ip6 ecn set ce
        iifname "rwan" ip6 ecn ect1 numgen random mod 100 < $ce ip6 ecn set ce
    }
}
EOF
}

CAPTURE_PID=""
start_capture() {  # name
    mkdir -p "$RAW"
    rm -f "$RAW/$1.pcap"
    # Started directly (not through a function) so $! is tcpdump itself.
    ip netns exec "$RTR" tcpdump -i rlan -Q in -s 0 -U -n -w "$RAW/$1.pcap" 2>"$RAW/$1.tcpdump.log" &
    CAPTURE_PID=$!
    sleep 1
}
stop_capture() {
    sleep 1
    kill -TERM "$CAPTURE_PID" 2>/dev/null || true
    wait "$CAPTURE_PID" 2>/dev/null || true
    CAPTURE_PID=""
}

client() { in_ns "$LAN" iperf3 -C cubic --repeating-payload -t "$DURATION" "$@" >/dev/null; }

# --- scenarios -----------------------------------------------------------------------
scenario_download_loss() {
    shape 40mbit 2mbit; impair 10 5 0
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=0; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=0
    client -c 10.77.2.2 -p 5201 -R -P 4
}
scenario_ecn() {
    shape 40mbit 2mbit; impair 2 0 3
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=1; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=1
    client -c 10.77.2.2 -p 5201 -R -P 3
}
scenario_upload_and_downloads() {
    shape 30mbit 2mbit; impair 5 0 0
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=0; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=0
    client -c 10.77.2.2 -p 5201 -P 1 &
    local up=$!
    client -c 10.77.2.2 -p 5202 -R -P 3
    wait "$up"
}
scenario_interactive() {
    shape 10mbit 1mbit; impair 5 0 0
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=0; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=0
    # Small paced writes both ways (PSH|ACK with a few bytes, piggybacked ACKs)
    # beside one download.
    client -c 10.77.2.2 -p 5201 --bidir -P 4 -l 80 -b 64k &
    local a=$!
    client -c 10.77.2.2 -p 5202 --bidir -P 2 -l 300 -b 200k &
    local b=$!
    client -c 10.77.2.2 -p 5203 -R -P 1
    wait "$a" "$b"
}
scenario_ipv6() {
    shape 40mbit 2mbit; impair 10 5 2
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=1; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=1
    client -6 -c fd77:2::2 -p 5201 -R -P 3 &
    local a=$!
    client -6 -c fd77:2::2 -p 5202 -P 1
    wait "$a"
}
scenario_vlan() {
    shape 40mbit 2mbit; impair 10 5 0
    in_ns "$LAN" sysctl -qw net.ipv4.tcp_ecn=0; in_ns "$SRV" sysctl -qw net.ipv4.tcp_ecn=0
    client -c 10.77.2.2 -p 5201 -B 10.77.100.2 -R -P 2 &
    local a=$!
    client -c 10.77.2.2 -p 5202 -B 10.77.200.2 -R -P 2 &
    local b=$!
    client -c 10.77.2.2 -p 5203 -B 10.77.200.2 --bidir -P 1 -l 100 -b 64k
    wait "$a" "$b"
}

SCENARIOS=(download_loss ecn upload_and_downloads interactive ipv6 vlan)
[ $# -gt 0 ] && SCENARIOS=("$@")

setup
mkdir -p "$OUT"
for s in "${SCENARIOS[@]}"; do
    declare -F "scenario_$s" >/dev/null || die "unknown scenario $s (known: download_loss ecn upload_and_downloads interactive ipv6 vlan)"
    name="${s//_/-}"
    say "scenario $name (${DURATION} s)"
    start_capture "$name"
    "scenario_$s"
    stop_capture
    frames=$(tcpdump -r "$RAW/$name.pcap" -n 2>/dev/null | wc -l)
    gzip -9 -n -c "$RAW/$name.pcap" > "$OUT/$name.pcap.gz"
    say "  $frames frames, $(stat -c %s "$OUT/$name.pcap.gz") bytes compressed -> $OUT/$name.pcap.gz"
done
[ -n "${KEEP_RAW:-}" ] || rm -rf "$RAW"
say "done"
