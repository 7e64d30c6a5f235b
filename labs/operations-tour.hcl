# A tour of the RDMA operations over Soft-RoCE on two local VMs: bandwidth
# and latency of WRITE, READ, SEND and atomics, the RC/UC/UD pingpongs, and
# rping through the RDMA connection manager.
lab "operations-tour" {
  description = "WRITE/READ/SEND/atomic bandwidth and latency, RC/UC/UD/SRQ pingpong, rping"
}

host "server" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}

host "client" {
  vm {
    network "rdma" {
      address = "10.99.0.2/24"
    }
  }
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
}

rxe "client" {
  host   = host.client
  netdev = "eth1"
}

locals {
  ops = ["write", "read", "send"]
}

workload "bw" {
  for_each   = toset(local.ops)
  tool       = "ib_${each.key}_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["4KiB", "64KiB"]
  iterations = 1000
}

workload "lat" {
  for_each   = toset(local.ops)
  tool       = "ib_${each.key}_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [64]
  iterations = 1000
}

workload "send_ud_bw" {
  tool       = "ib_send_bw"
  server     = rxe.server
  client     = rxe.client
  transport  = "UD"
  sizes      = [1024]
  iterations = 1000
}

workload "write_uc_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  transport  = "UC"
  iterations = 1000
}

workload "atomic_bw" {
  tool       = "ib_atomic_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = [8]
  iterations = 1000
}

workload "atomic_lat" {
  tool       = "ib_atomic_lat"
  server     = rxe.server
  client     = rxe.client
  iterations = 1000
}

workload "pingpong" {
  for_each   = toset(["rc", "uc", "ud", "srq"])
  tool       = "ibv_${each.key}_pingpong"
  server     = rxe.server
  client     = rxe.client
  sizes      = [1024]
  iterations = 500
}

workload "rping" {
  tool       = "rping"
  server     = rxe.server
  client     = rxe.client
  iterations = 100
}
