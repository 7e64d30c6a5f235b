# Two machines you can reach over SSH, with a NIC each on the same network.
# Set their addresses, then: rlab validate . && rlab plan . && rlab run .
lab "ssh-pair" {
  description = "RDMA WRITE bandwidth and latency over Soft-RoCE between two SSH hosts, with a TCP baseline"
}

variable "server" {
  type        = string
  default     = "192.0.2.10"
  description = "Address of the server (rlab validate -var server=...)"
}

variable "client" {
  type    = string
  default = "192.0.2.11"
}

variable "netdev" {
  type        = string
  default     = "eth1"
  description = "The NIC that carries RDMA traffic on both hosts"
}

ssh {
  user        = "root"
  known_hosts = "~/.ssh/known_hosts" # host keys are always verified
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

capture "roce" {
  host   = host.server
  netdev = var.netdev
  filter = "udp port 4791"
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["64KiB"]
  iterations = 1000
}

workload "write_lat" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  iterations = 1000
}

workload "tcp" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "1GiB"
}
