# Three transports on one link, side by side: RDMA WRITE over Soft-RoCE
# (rxe: RoCE v2, InfiniBand transport packets in UDP), RDMA WRITE over
# soft-iWARP (siw: RDMAP/DDP/MPA over TCP), and the plain TCP baseline; the
# same message size and the same time each, so the three compare. summary.md
# ("RDMA vs TCP") and report.html put them in one table, each RDMA line
# naming its transport (RoCE or iWARP, from the device).
#
# Why the macvlan: siw connects its QPs only through the RDMA CM (rlab runs
# perftest with -R there), and the RDMA CM picks the device by the IP
# address it resolves: an rxe and a siw on one netdev both claim that
# netdev's address, and the CM takes whichever device the kernel registered
# first (rlab creates a host's devices at once, so either). So the rxe gets
# a macvlan of the NIC (mveth1: its own MAC and IPv4 address on the same
# wire) and the siw the NIC itself. The RoCE GID table of an rxe on mveth1
# holds mveth1's addresses only (and those of devices stacked on it, never
# the NIC's under it), so the CM resolves eth1's address to the siw alone.
# The rxe workload needs no CM: perftest without -R swaps its QP numbers
# over TCP and addresses rxe by its GID. (Not a VLAN: rdma_rxe refuses
# one, "rxe creation allowed on top of a real device only".) The TCP
# baseline dials the server's rxe netdev, mveth1 (labs/README.md says the
# rule). arp_ignore=1 keeps eth1 from answering ARP for mveth1's address:
# the peer would then send RoCE to the MAC of eth1, where no rxe listens.
#
# Before the run, on each host (192.168.10.2 on the client):
#   ip link add link eth1 name mveth1 type macvlan mode bridge
#   ip addr add 192.168.10.1/24 dev mveth1 && ip link set mveth1 up
#   sysctl -w net.ipv4.conf.all.arp_ignore=1
# then
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 labs/transports.hcl
# and `ip link del mveth1` afterwards.
lab "transports" {
  description = "RDMA WRITE over Soft-RoCE (rxe) and over soft-iWARP (siw), and TCP, on one link, side by side"
}

variable "server" {
  type    = string
  default = "192.0.2.10"
}

variable "client" {
  type    = string
  default = "192.0.2.11"
}

variable "netdev" {
  type        = string
  default     = "eth1"
  description = "The NIC of the link: siw's netdev, under the rxe's macvlan"
}

variable "rxe_netdev" {
  type        = string
  default     = "mveth1"
  description = "A macvlan of var.netdev with its own IPv4 address: the rxe's netdev"
}

variable "seconds" {
  type        = string
  default     = "10s"
  description = "How long each transfer runs"
}

ssh {
  user          = "root"
  identity_file = "~/.ssh/id_ed25519"
  known_hosts   = "~/.ssh/known_hosts"
}

host "server" {
  address = var.server
}

host "client" {
  address = var.client
}

rxe "server" {
  host   = host.server
  netdev = var.rxe_netdev
}

rxe "client" {
  host   = host.client
  netdev = var.rxe_netdev
}

siw "server_iwarp" {
  host   = host.server
  netdev = var.netdev
}

siw "client_iwarp" {
  host   = host.client
  netdev = var.netdev
}

workload "write_rxe" {
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = ["64KiB"]
  duration = var.seconds
}

workload "write_siw" {
  tool     = "ib_write_bw"
  server   = siw.server_iwarp
  client   = siw.client_iwarp
  sizes    = ["64KiB"]
  duration = var.seconds
}

workload "tcp" {
  tool     = "tcp"
  server   = host.server
  client   = host.client
  duration = var.seconds
}

# What each transfer put on the wire, on the server: RoCE v2 is UDP 4791
# (on the macvlan), iWARP is TCP (on the NIC itself; not the SSH port).
capture "rxe" {
  host     = host.server
  netdev   = var.rxe_netdev
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "16MiB"
  during   = [workload.write_rxe]
}

capture "siw" {
  host     = host.server
  netdev   = var.netdev
  filter   = "tcp and not port 22"
  snaplen  = 128
  max_size = "16MiB"
  during   = [workload.write_siw]
}
