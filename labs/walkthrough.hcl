# The seed walkthrough: RDMA WRITE, then READ, between two machines you
# already have, with one capture of the control plane (perftest's TCP
# exchange) and one of the data plane (RoCEv2), and 1 GiB moved over RDMA
# and over TCP for comparison.
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 labs/walkthrough.hcl
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

# perftest exchanges QP numbers, keys and addresses over TCP port 18515.
capture "control" {
  host    = host.server
  netdev  = var.netdev
  filter  = "tcp port 18515"
  snaplen = 512
}

# RoCEv2 is RDMA in UDP to port 4791; headers are all we need.
capture "data" {
  host     = host.server
  netdev   = var.netdev
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "128MiB"
  during   = [workload.write_bw, workload.read_bw]
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["1MiB"]
  iterations = 1024 # 1 GiB
}

workload "read_bw" {
  tool       = "ib_read_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["1MiB"]
  iterations = 1024
}

workload "tcp_1g" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "1GiB"
}
