package image

// Guest configuration written into the image. These files are part of the
// recipe: changing any of them changes the image hash, so a cached image is
// rebuilt.

// FwCfgPrefix is the fw_cfg folder the controller hands per-VM files in:
// opt/rlab/<name>. The guest reads them from
// /sys/firmware/qemu_fw_cfg/by_name/opt/rlab/<name>/raw.
const FwCfgPrefix = "opt/rlab/"

// The fw_cfg file names the guest understands (after FwCfgPrefix).
const (
	FwHostKey        = "ssh_host_ed25519_key"     // private host key (OpenSSH PEM)
	FwHostKeyPub     = "ssh_host_ed25519_key.pub" // its public half
	FwAuthorizedKeys = "authorized_keys"          // root's authorized_keys
	FwNetworkPrefix  = "net-"                     // net-<n>: a systemd-networkd .network file
)

// guestFiles are written into the root file system (path -> mode, content).
type guestFile struct {
	path    string
	mode    uint32
	content string
}

// fwcfgScript installs what the controller handed over through fw_cfg. It
// runs before sshd and systemd-networkd. Without fw_cfg (an image booted by
// hand) it makes its own host key so sshd still starts.
const fwcfgScript = `#!/bin/sh
# rlab: install per-VM files handed over by QEMU fw_cfg (opt/rlab/*).
set -u
modprobe qemu_fw_cfg 2>/dev/null
d=/sys/firmware/qemu_fw_cfg/by_name/opt/rlab
i=0
while [ ! -d "$d" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
if [ -r "$d/ssh_host_ed25519_key/raw" ]; then
  umask 077
  cat "$d/ssh_host_ed25519_key/raw" > /etc/ssh/ssh_host_ed25519_key
  umask 022
  cat "$d/ssh_host_ed25519_key.pub/raw" > /etc/ssh/ssh_host_ed25519_key.pub
  echo "rlab-fwcfg: host key $(cut -d' ' -f1-2 /etc/ssh/ssh_host_ed25519_key.pub)" > /dev/console
elif [ ! -s /etc/ssh/ssh_host_ed25519_key ]; then
  ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key
fi
if [ -r "$d/authorized_keys/raw" ]; then
  install -d -m 700 /root/.ssh
  umask 077
  cat "$d/authorized_keys/raw" > /root/.ssh/authorized_keys
  umask 022
fi
mkdir -p /run/systemd/network
for f in "$d"/net-*; do
  [ -r "$f/raw" ] || continue
  cat "$f/raw" > "/run/systemd/network/50-rlab-${f##*/}.network"
done
exit 0
`

const fwcfgUnit = `[Unit]
Description=rlab: install host key, authorized key and data NIC settings from QEMU fw_cfg
DefaultDependencies=no
After=systemd-remount-fs.service local-fs.target systemd-modules-load.service
Before=network-pre.target systemd-networkd.service ssh.service sysinit.target
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/rlab-fwcfg

[Install]
WantedBy=sysinit.target
RequiredBy=ssh.service
`

const sshdConfig = `PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
HostKey /etc/ssh/ssh_host_ed25519_key
UseDNS no
MaxStartups 50:30:100
`

// eth0 is the management NIC (QEMU user-mode net, DHCP from slirp). Data NICs
// get their .network files from fw_cfg at boot.
const eth0Network = `[Match]
Name=eth0

[Network]
DHCP=ipv4
LinkLocalAddressing=no
IPv6AcceptRA=no
`

var guestFiles = []guestFile{
	{"/usr/local/sbin/rlab-fwcfg", 0o755, fwcfgScript},
	{"/etc/systemd/system/rlab-fwcfg.service", 0o644, fwcfgUnit},
	{"/etc/ssh/sshd_config.d/rlab.conf", 0o644, sshdConfig},
	{"/etc/systemd/network/10-eth0.network", 0o644, eth0Network},
	{"/etc/systemd/journald.conf.d/rlab.conf", 0o644, "[Journal]\nStorage=volatile\n"},
	{"/etc/fstab", 0o644, "/dev/vda / ext4 rw,relatime 0 1\n"},
	{"/etc/hostname", 0o644, "rlab\n"},
	{"/etc/hosts", 0o644, "127.0.0.1\tlocalhost\n"},
	{"/etc/modules-load.d/rlab.conf", 0o644, "qemu_fw_cfg\n"},
	{"/etc/machine-id", 0o444, ""},
}

// guestLinks are symlinks (path -> target): enable units, mask the ones that
// only burn emulated cycles or hold up boot.
var guestLinks = [][2]string{
	{"/etc/systemd/system/sysinit.target.wants/rlab-fwcfg.service", "../rlab-fwcfg.service"},
	{"/etc/systemd/system/ssh.service.requires/rlab-fwcfg.service", "../rlab-fwcfg.service"},
	{"/etc/systemd/system/multi-user.target.wants/systemd-networkd.service", "/lib/systemd/system/systemd-networkd.service"},
	{"/etc/systemd/system/systemd-networkd-wait-online.service", "/dev/null"},
	{"/etc/systemd/system/apt-daily.timer", "/dev/null"},
	{"/etc/systemd/system/apt-daily-upgrade.timer", "/dev/null"},
	{"/etc/systemd/system/e2scrub_all.timer", "/dev/null"},
	{"/etc/systemd/system/e2scrub_reap.service", "/dev/null"},
	{"/etc/systemd/system/fstrim.timer", "/dev/null"},
	{"/etc/systemd/system/dpkg-db-backup.timer", "/dev/null"},
	{"/etc/systemd/system/man-db.timer", "/dev/null"},
}
