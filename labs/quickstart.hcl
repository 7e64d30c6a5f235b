# Two local QEMU VMs joined by one data network, Soft-RoCE on both, RDMA WRITE
# bandwidth and latency, an RC pingpong, a TCP baseline, and a RoCEv2 capture.
# This is what `make demo` runs: `rlab run labs/quickstart.hcl`.
#
# Sized by time, not by bytes: without KVM (TCG software emulation) Soft-RoCE
# moves about 0.1 Gb/s, so 2000 × 1 MiB alone took 98 s. Each bandwidth size
# runs 3 s, enough for perftest's average; the numbers show that the pipeline
# works end to end, not what the hardware can do.
lab "quickstart" {
  description = "Two local VMs: RDMA WRITE bandwidth and latency over Soft-RoCE, pingpong, TCP baseline, RoCEv2 capture. Under TCG (no KVM) the numbers show the pipeline works, not performance."
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
  tool     = "ib_write_bw"
  server   = rxe.server
  client   = rxe.client
  sizes    = ["4KiB", "64KiB", "1MiB"]
  duration = "3s"
}

workload "write_lat" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [64, 4096]
  iterations = 300
}

workload "rc_pingpong" {
  tool       = "ibv_rc_pingpong"
  server     = rxe.server
  client     = rxe.client
  sizes      = ["4KiB"]
  iterations = 300
}

workload "tcp_baseline" {
  tool     = "tcp"
  server   = host.server
  client   = host.client
  duration = "3s"
}
