#!/bin/bash
# Installs the Debian packages rlab's tests and demo need. Idempotent; quiet
# when everything is present. Needs root (or sudo).
set -euo pipefail
PKGS=(openssh-server openssh-client sudo tcpdump iproute2 qemu-system-x86 qemu-utils mmdebstrap e2fsprogs tshark procps psmisc graphviz chromium fonts-dejavu-core ansible-core)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
