# The seed walkthrough: RDMA WRITE, then READ, between two machines you
# already have, with one capture of the control plane (the RDMA-CM
# connection handshake) and one of the data plane (the RoCEv2 traffic of the
# two transfers), and 1 GiB moved over RDMA and over TCP for comparison.
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 labs/walkthrough.hcl
#   rlab pcap runs/walkthrough/<run>/hosts/server/captures/cap.control.pcap0
lab "walkthrough" {
  description = "WRITE then READ over Soft-RoCE, control and data plane captures, 1 GiB RDMA vs TCP"
}

variable "server" {
  type        = string
  default     = "192.0.2.10"
  description = "Address of the server machine"
}

variable "client" {
  type        = string
  default     = "192.0.2.11"
  description = "Address of the client machine"
}

variable "netdev" {
  type    = string
  default = "eth1"
}

variable "iterations" {
  type        = number
  default     = 1024
  description = "1 MiB messages per transfer: 1024 moves 1 GiB"
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
  netdev = var.netdev
}

rxe "client" {
  host   = host.client
  netdev = var.netdev
}

# Both perftest runs connect through RDMA-CM (-R, below): the REQ, REP and
# RTU that set up each connection, and the DREQ/DREP that end it, are MADs
# sent to the well-known QP 1 in RoCEv2 (UDP 4791). BTH bytes 4-7 (udp[12:4])
# end with the destination QP.
capture "control" {
  host    = host.server
  netdev  = var.netdev
  filter  = "udp dst port 4791 and udp[12:4] & 0xffffff = 1"
  snaplen = 512 # a CM MAD is 256 bytes: keep it whole for rlab pcap
  during  = [workload.write_bw, workload.read_bw]
}

# The data plane: every other RoCEv2 packet of the two transfers (RDMA WRITE
# and READ requests, responses and ACKs); headers are all we need.
capture "data" {
  host     = host.server
  netdev   = var.netdev
  filter   = "udp dst port 4791 and not udp[12:4] & 0xffffff = 1"
  snaplen  = 128
  max_size = "128MiB"
  during   = [workload.write_bw, workload.read_bw]
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["1MiB"]
  iterations = var.iterations
  args       = ["-R"] # connect through RDMA-CM (the control capture)
}

workload "read_bw" {
  tool       = "ib_read_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["1MiB"]
  iterations = var.iterations
  args       = ["-R"]
}

workload "tcp_1g" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "${var.iterations}MiB"
}
