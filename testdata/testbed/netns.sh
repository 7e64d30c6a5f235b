#!/bin/bash
# netns.sh: a test bed of lab hosts on this machine, each a network namespace
# running its own OpenSSH sshd (Debian openssh-server) with its own config
# and host key. Needs root. Used by engine/testbed (Go) and bench/facts.
#
#   netns.sh up DIR IDX N M [MAXSTARTUPS [K]]
#                                          N direct hosts on subnet A and, if M>0 or K>0, a
#                                          bastion (on A and B) and M hosts only on subnet B;
#                                          if K>0, a second bastion "bastion2" (on B and C)
#                                          and K hosts only on subnet C: reached through
#                                          the bastion, then bastion2. MAXSTARTUPS "" or
#                                          omitted: raised (200:30:400)
#   netns.sh down DIR                      remove everything `up` made in DIR
#   netns.sh start-sshd DIR NAME           (re)start one host's sshd, applying
#                                          DIR/NAME/private-home (bind over the login
#                                          home) and DIR/NAME/disk-kb (tmpfs home)
#   netns.sh stop-sshd DIR NAME            kill one host's sshd (SIGTERM)
#
# IDX (0-49) keeps concurrent beds apart: subnets 10.(200+IDX).0.0/17 (A),
# 10.(200+IDX).128.0/18 (B) and 10.(200+IDX).192.0/18 (C); link names
# rb<IDX>... Hosts are written to DIR/hosts.tsv: name, netns, address, side
# (a|bastion|b|bastion2|c). Hosts are made RLAB_TESTBED_JOBS (default 16) at
# a time and torn down 32 at a time. Each sshd logs to DIR/NAME/sshd.log at
# RLAB_TESTBED_LOGLEVEL (default ERROR; INFO logs every accepted login). The
# bridge-side veth of a host is named in DIR/NAME/veth (to shape its traffic).
#
# Traps met on these machines (see DESIGN.md, "Test beds"): root's ~/.bashrc
# runs pyenv init, which serialises concurrent logins as root, so hosts are
# logged into as a dedicated user with a clean home; keys live under DIR,
# which may be under a world-writable folder, so StrictModes is off; fan-out
# needs MaxStartups raised (or left at the default to test pacing).
set -euo pipefail

USER_OK=rlabbed     # passwordless sudo
USER_PW=rlabnopw    # sudo asks for a password
HOME_BASE=/var/lib/rlab-testbed/home

die() { echo "netns.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root"

ensure_users() {
  mkdir -p "$HOME_BASE"
  exec 9>/var/lib/rlab-testbed/users.lock
  flock 9
  for u in "$USER_OK" "$USER_PW"; do
    if ! id "$u" >/dev/null 2>&1; then
      useradd -M -d "$HOME_BASE/$u" -s /bin/bash "$u"
    fi
    # '*' (not '!'): sshd refuses a locked account even for key logins.
    usermod -p '*' "$u"
    if [ ! -d "$HOME_BASE/$u" ]; then
      mkdir -p "$HOME_BASE/$u"
      chown "$u:$u" "$HOME_BASE/$u"
      chmod 0755 "$HOME_BASE/$u"
    fi
  done
  printf '%s ALL=(ALL) NOPASSWD: ALL\n%s ALL=(ALL) ALL\n' "$USER_OK" "$USER_PW" >/etc/sudoers.d/rlab-testbed
  chmod 0440 /etc/sudoers.d/rlab-testbed
  flock -u 9
}

addr() { # addr PREFIX3 BASE(0|128) N -> dotted address N hosts into the half
  local n=$(( $3 ))
  echo "$1.$(( $2 + n / 256 )).$(( n % 256 ))"
}

# The login users read their authorized keys themselves, and DIR may be a
# private (0700) temp folder: keep the keys where they can read them.
authkeys() { echo "/var/lib/rlab-testbed/auth/rb$(cat "$1/index").keys"; }

write_conf() { # write_conf DIR NAME MAXSTARTUPS
  local d="$1/$2"
  cat >"$d/sshd_config" <<CONF
Port 22
ListenAddress 0.0.0.0
HostKey $d/ssh_host_ed25519_key
PidFile $d/sshd.pid
AuthorizedKeysFile $(authkeys "$1")
AllowUsers $USER_OK $USER_PW
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowTcpForwarding yes
X11Forwarding no
PrintMotd no
PrintLastLog no
MaxStartups $3
MaxSessions 64
LogLevel ${RLAB_TESTBED_LOGLEVEL:-ERROR}
Subsystem sftp internal-sftp
CONF
}

start_sshd() { # start_sshd DIR NAME
  local ns
  ns=$(awk -v n="$2" '$1==n {print $2}' "$1/hosts.tsv")
  [ -n "$ns" ] || die "no host $2 in $1"
  start_sshd_ns "$1" "$2" "$ns"
}

start_sshd_ns() { # start_sshd_ns DIR NAME NETNS
  local dir="$1" name="$2" ns="$3"
  stop_sshd "$dir" "$name"
  local mounts=":"
  if [ -d "$dir/$name/private-home" ]; then
    mounts="mount --bind '$dir/$name/private-home' '$HOME_BASE/$USER_OK'"
  fi
  if [ -f "$dir/$name/disk-kb" ]; then
    local kb uid gid
    kb=$(cat "$dir/$name/disk-kb"); uid=$(id -u "$USER_OK"); gid=$(id -g "$USER_OK")
    mounts="mount -t tmpfs -o size=${kb}k,uid=$uid,gid=$gid,mode=0755 rlab-full '$HOME_BASE/$USER_OK'"
  fi
  # ip netns exec mounts a fresh /sys, which hides this machine's cgroup
  # mounts; a host of today has cgroup v2 at /sys/fs/cgroup (the agent runs
  # workloads in cgroups there). Best effort: a kernel without it leaves the
  # agent to process groups, as on such a host.
  mounts="$mounts && { mount -t cgroup2 rlab-bed-cgroup2 /sys/fs/cgroup 2>/dev/null || :; }"
  mkdir -p /run/sshd
  # ip netns exec gives the sshd its own mount namespace (slave of ours),
  # so these mounts are this host's only.
  ip netns exec "$ns" sh -c "$mounts && exec /usr/sbin/sshd -f '$dir/$name/sshd_config' -E '$dir/$name/sshd.log'"
  # sshd writes its pid file after it forks; callers may stop it at once.
  for _ in $(seq 100); do [ -s "$dir/$name/sshd.pid" ] && return 0; sleep 0.05; done
  die "sshd of $name did not start"
}

# alive PID: the process exists and is not a zombie (an exited sshd whose
# parent, PID 1 of some containers, reaps it seconds later: its sockets are
# already closed).
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

stop_sshd() { # stop_sshd DIR NAME
  local pidf="$1/$2/sshd.pid"
  if [ -f "$pidf" ]; then
    local pid; pid=$(cat "$pidf")
    kill "$pid" 2>/dev/null || true
    # Until it has exited, the listener may still accept a connection.
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
    rm -f "$pidf"
  fi
}

up() { # up DIR IDX N M [MAXSTARTUPS [K]]
  local dir="$1" idx="$2" n="$3" m="$4" ms="${5:-200:30:400}" k2="${6:-0}"
  [[ "$idx" =~ ^[0-9]+$ ]] && [ "$idx" -lt 50 ] || die "bad index $idx"
  [[ "$k2" =~ ^[0-9]+$ ]] || die "bad count $k2"
  mkdir -p "$dir"
  ensure_users
  local p3="10.$((200 + idx))" ba="rb${idx}a" bb="rb${idx}b" bc="rb${idx}c"
  echo "$idx" >"$dir/index"
  : >"$dir/hosts.tsv"
  : >"$dir/known_hosts"
  [ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C rlab-testbed -f "$dir/id_ed25519"
  mkdir -p /var/lib/rlab-testbed/auth
  install -m 0644 "$dir/id_ed25519.pub" "$(authkeys "$dir")"
  ip link add "$ba" type bridge 2>/dev/null || true
  ip addr add "$p3.0.1/17" dev "$ba" 2>/dev/null || true
  ip link set "$ba" up
  if [ "$m" -gt 0 ] || [ "$k2" -gt 0 ]; then
    ip link add "$bb" type bridge 2>/dev/null || true # no address: unreachable from here
    ip link set "$bb" up
  fi
  if [ "$k2" -gt 0 ]; then
    ip link add "$bc" type bridge 2>/dev/null || true # only bastion2 is on it
    ip link set "$bc" up
  fi
  # The root namespace talks to every host on the bridge: its neighbour
  # table (default gc_thresh3 1024, shared by every bed) overflows near 1,000
  # hosts ("neighbor table overflow", then "no route to host"), and every ARP
  # broadcast is copied to each host's port, past the input backlog (1000
  # packets: millions dropped at 1,000 hosts, so some lookups fail after 3
  # tries). Raised to fit, never lowered; the bridge retries its lookups
  # longer.
  local total=$((n + m + k2)) key want cur
  for key in net.ipv4.neigh.default.gc_thresh2:$((2 * total + 512)) \
    net.ipv4.neigh.default.gc_thresh3:$((4 * total + 1024)) \
    net.core.netdev_max_backlog:$((10 * total + 1000)); do
    want="${key#*:}" key="${key%%:*}"
    cur="$(sysctl -n "$key" 2>/dev/null || echo 0)"
    [ "$cur" -ge "$want" ] || sysctl -qw "$key=$want" || true
  done
  sysctl -qw "net.ipv4.neigh.$ba.mcast_solicit=10" || true
  local hosts=()
  for ((i = 0; i < n; i++)); do hosts+=("h$i a $(addr "$p3" 0 $((10 + i)))"); done
  if [ "$m" -gt 0 ] || [ "$k2" -gt 0 ]; then
    hosts+=("bastion bastion $p3.0.2")
    for ((j = 0; j < m; j++)); do hosts+=("b$j b $(addr "$p3" 128 $((10 + j)))"); done
  fi
  if [ "$k2" -gt 0 ]; then
    hosts+=("bastion2 bastion2 $p3.128.3")
    for ((j = 0; j < k2; j++)); do hosts+=("c$j c $(addr "$p3" 192 $((10 + j)))"); done
  fi
  # Hosts are made in parallel (JOBS at a time; 200 hosts take seconds,
  # not minutes); each writes its own rows, joined in order afterwards.
  local k=0 jobs="${RLAB_TESTBED_JOBS:-16}" pids=() h
  for h in "${hosts[@]}"; do
    k=$((k + 1))
    make_host "$dir" "$idx" "$k" "$ms" "$ba" "$bb" "$bc" "$p3" $h &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$jobs" ]; then
      wait "${pids[0]}" || die "host ${pids[0]} failed"
      pids=("${pids[@]:1}")
    fi
  done
  local p
  for p in "${pids[@]}"; do wait "$p" || die "a host failed"; done
  for h in "${hosts[@]}"; do
    read -r name _ _ <<<"$h"
    cat "$dir/$name/known_hosts.row" >>"$dir/known_hosts"
    cat "$dir/$name/hosts.row" >>"$dir/hosts.tsv"
  done
}

make_host() { # make_host DIR IDX K MAXSTARTUPS BRIDGE_A BRIDGE_B BRIDGE_C PREFIX3 NAME SIDE IP
  local dir="$1" idx="$2" k="$3" ms="$4" ba="$5" bb="$6" bc="$7" p3="$8" name="$9" side="${10}" ip="${11}"
  local ns="rb${idx}-$name" veth="rb${idx}v$((k - 1))"
  mkdir -p "$dir/$name"
  # Names left by a bed torn down a moment ago (netns removal is lazy).
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$veth" 2>/dev/null || true
  ip link del "rb${idx}w$k" 2>/dev/null || true
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  local br="$ba" plen=17
  case "$side" in
    b | bastion2) br="$bb" plen=18 ;;
    c) br="$bc" plen=18 ;;
  esac
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$br" up
  echo "$veth" >"$dir/$name/veth"
  ip -n "$ns" addr add "$ip/$plen" dev eth0
  ip -n "$ns" link set eth0 up
  # A bastion's second leg: the subnet behind it (B for the bastion, C for
  # bastion2), which nothing else on the path can reach.
  local leg2=""
  case "$side" in
    bastion) leg2="$bb $p3.128.2" ;;
    bastion2) leg2="$bc $p3.192.2" ;;
  esac
  if [ -n "$leg2" ]; then
    local veth2="rb${idx}w$k" br2 ip2
    read -r br2 ip2 <<<"$leg2"
    ip link add "$veth2" type veth peer name eth1 netns "$ns"
    ip link set "$veth2" master "$br2" up
    ip -n "$ns" addr add "$ip2/18" dev eth1
    ip -n "$ns" link set eth1 up
  fi
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$dir/$name/ssh_host_ed25519_key" <<<y >/dev/null
  echo "$ip $(cut -d' ' -f1,2 "$dir/$name/ssh_host_ed25519_key.pub")" >"$dir/$name/known_hosts.row"
  printf '%s\t%s\t%s\t%s\n' "$name" "$ns" "$ip" "$side" >"$dir/$name/hosts.row"
  write_conf "$dir" "$name" "$ms"
  start_sshd_ns "$dir" "$name" "$ns"
}

down() { # down DIR
  local dir="$1"
  [ -f "$dir/hosts.tsv" ] || return 0
  local idx; idx=$(cat "$dir/index")
  # Delete the links ourselves: a deleted netns releases its veths lazily,
  # and the next bed in this slot would trip over them.
  ip -o link show 2>/dev/null | awk -F': ' -v p="rb${idx}[vw]" '$2 ~ "^"p {sub(/@.*/, "", $2); print $2}' |
    while read -r l; do ip link del "$l" 2>/dev/null || true; done
  # Every host at once: stop its sshd, kill what is left in its namespace,
  # remove the namespace (200 hosts one by one took minutes).
  local pids=()
  while IFS=$'\t' read -r name ns _ _; do
    { stop_sshd "$dir" "$name"
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true; } &
    pids+=($!)
    if [ "${#pids[@]}" -ge 32 ]; then wait "${pids[0]}" || true; pids=("${pids[@]:1}"); fi
  done <"$dir/hosts.tsv"
  wait || true
  ip link del "rb${idx}a" 2>/dev/null || true
  ip link del "rb${idx}b" 2>/dev/null || true
  ip link del "rb${idx}c" 2>/dev/null || true
  rm -f "$dir/hosts.tsv"
}

cmd="${1:-}"; shift || true
case "$cmd" in
  up) up "$@" ;;
  down) down "$@" ;;
  start-sshd) start_sshd "$@" ;;
  stop-sshd) stop_sshd "$@" ;;
  *) sed -n '2,25p' "$0" >&2; exit 2 ;;
esac
