# Two local QEMU VMs joined by one data network, Soft-RoCE on both, RDMA WRITE
# bandwidth and latency, an RC pingpong, a TCP baseline, and a RoCEv2 capture.
# This is what `make demo` runs: `rlab run labs/quickstart.hcl`.
lab "quickstart" {
  description = "Two local VMs: RDMA WRITE bandwidth and latency over Soft-RoCE, pingpong, TCP baseline, RoCEv2 capture"
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

capture "roce" {
  host     = host.server
  netdev   = "eth1"
  filter   = "udp port 4791"
  snaplen  = 128
  max_size = "64MiB"
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["4KiB", "64KiB", "1MiB"]
  iterations = 2000
}

workload "write_lat" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [64, 4096]
  iterations = 1000
}

workload "rc_pingpong" {
  tool       = "ibv_rc_pingpong"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["4KiB"]
  iterations = 1000
}

workload "tcp_baseline" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "256MiB"
}
