# RDMA devices rlab did not create: an rdma block names a device that exists
# already (hardware such as mlx5_0, irdma0, bnxt_re0, efa_0, or an rxe/siw an
# admin made, e.g. `rdma link add rxe_admin type rxe netdev eth1`) and the
# port to use. rlab checks the port is ACTIVE, picks the GID by the port's
# link layer (the RoCE v2 GID of the netdev's IPv4 on Ethernet, GID 0 and the
# LID on InfiniBand), runs the workloads on it, and never deletes it: it is
# journaled as found, and neither the run nor `rlab down` touches it.
#   rlab run -var server=10.0.0.5 -var client=10.0.0.6 -var device=mlx5_0 labs/found.hcl
lab "found" {
  description = "RDMA WRITE and rping over a device rlab did not create"
}

variable "server" {
  type    = string
  default = "192.0.2.10"
}

variable "client" {
  type    = string
  default = "192.0.2.11"
}

variable "device" {
  type        = string
  default     = "rxe_admin"
  description = "The existing RDMA device on both hosts"
}

variable "iterations" {
  type    = number
  default = 5000
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

rdma "server" {
  host   = host.server
  device = var.device
  port   = 1
}

rdma "client" {
  host   = host.client
  device = var.device
}

workload "write" {
  tool       = "ib_write_bw"
  server     = rdma.server
  client     = rdma.client
  sizes      = [65536]
  iterations = var.iterations
}

workload "rping" {
  tool       = "rping"
  server     = rdma.server
  client     = rdma.client
  sizes      = [4096]
  iterations = 100
}
