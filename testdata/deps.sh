#!/bin/bash
# Installs the Debian packages rlab needs. Idempotent; quiet when everything
# is present. Needs root (or sudo).
#
#   deps.sh demo   what `make demo` needs: QEMU to boot the two local VMs,
#                  mmdebstrap and e2fsprogs to build their image, Graphviz and
#                  a font for the report's topology. No sshd (rlab is the SSH
#                  client, in Go; the VMs run their own), no browser, no Ansible.
#   deps.sh test   (the default) the demo's, plus the test toolchain: OpenSSH
#                  and sudo for the network-namespace hosts, tcpdump and tshark
#                  for the capture tests, chromium for the report's rendering
#                  tests, ansible-core for the inventory tests, psmisc/procps,
#                  gcc, make and the verbs and RDMA-CM headers (labs/programs
#                  compile here; program workloads build on netns hosts).
set -euo pipefail
DEMO=(qemu-system-x86 qemu-utils mmdebstrap e2fsprogs graphviz fonts-dejavu-core)
TEST=("${DEMO[@]}" openssh-server openssh-client sudo tcpdump iproute2 tshark procps psmisc chromium ansible-core gcc make libc6-dev libibverbs-dev librdmacm-dev)
case "${1:-test}" in
  demo) PKGS=("${DEMO[@]}") ;;
  test) PKGS=("${TEST[@]}") ;;
  *) echo "usage: $0 [demo|test]" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
