# Soft-iWARP beside Soft-RoCE.
#
# siw blocks are written like rxe blocks: rlab loads the siw module, creates
# siw_eth1 on each host (`rdma link add siw_eth1 type siw netdev eth1`) and
# deletes it afterwards. iWARP connects QPs only through the RDMA CM, so rlab
# runs perftest with -R there (rping always uses the CM); what iWARP cannot
# do (UC/UD, atomics, the pingpong tools, WRITE with immediate) is refused
# when the lab loads.
#
# The RDMA CM picks a device by IP address: a siw and an rxe on the same
# netdev (the same addresses) cannot both be reached through it, and CM tools
# (rping, perftest -R) land on whichever the kernel lists first. Give each
# its own netdev or address. labs/found.hcl uses a device rlab did not create.
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 labs/iwarp.hcl
lab "iwarp" {
  description = "RDMA WRITE and rping over soft-iWARP"
}

variable "server" {
  type    = string
  default = "192.0.2.10"
}

variable "client" {
  type    = string
  default = "192.0.2.11"
}

variable "iterations" {
  type    = number
  default = 1000
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

siw "server" {
  host   = host.server
  netdev = "eth1"
}

siw "client" {
  host   = host.client
  netdev = "eth1"
}

workload "write_iwarp" {
  tool       = "ib_write_bw"
  server     = siw.server
  client     = siw.client
  sizes      = [65536]
  iterations = var.iterations
}

# 200 pings over siw take a few seconds, even in TCG VMs. siw in some
# kernels (Debian 12's 6.1) sometimes never reads the client's first Send
# (rlab names that stall when it happens): a minute, not the default five,
# is what such a run then costs.
workload "rping_iwarp" {
  tool       = "rping"
  server     = siw.server
  client     = siw.client
  sizes      = [4096]
  iterations = var.iterations
  timeout    = "60s"
}

# iWARP runs over TCP: its traffic is the siw connection's TCP stream (the
# MPA handshake and the data on it), not UDP 4791 as RoCE's.
capture "iwarp" {
  host     = host.server
  netdev   = "eth1"
  filter   = "tcp and not port 22"
  during   = [workload.write_iwarp, workload.rping_iwarp]
  max_size = "16MiB"
}
