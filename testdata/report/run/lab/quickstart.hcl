lab "quickstart" {
  description = "Two VMs, RDMA WRITE/READ bandwidth and latency over Soft-RoCE beside a TCP baseline, with a RoCEv2 capture"
}

host "server" {
  vm {
    network "lab" { address = "10.99.0.1/24" }
  }
}
host "client" {
  vm {
    network "lab" { address = "10.99.0.2/24" }
  }
}

rxe "server" {
  host   = host.server
  netdev = "eth1"
  name   = "rxe0"
}
rxe "client" {
  host   = host.client
  netdev = "eth1"
  name   = "rxe0"
}

capture "roce" {
  host    = host.server
  netdev  = "eth1"
  filter  = "udp port 4791"
  snaplen = 128
}

workload "write_bw" {
  tool       = "ib_write_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = [4096, 65536]
  iterations = 1000
  expect {
    condition = result.bw_avg_gbps > 0.05
    message   = "Soft-RoCE WRITE bandwidth below 50 Mb/s"
  }
}

workload "read_bw" {
  tool       = "ib_read_bw"
  server     = rxe.server
  client     = rxe.client
  sizes      = [65536]
  iterations = 1000
}

workload "write_lat" {
  tool       = "ib_write_lat"
  server     = rxe.server
  client     = rxe.client
  sizes      = [2]
  iterations = 300
  expect {
    condition = result.lat_p99_us < 2000
    message   = "99th percentile WRITE latency above 2 ms"
  }
}

workload "pingpong" {
  tool       = "ibv_rc_pingpong"
  server     = rxe.server
  client     = rxe.client
  sizes      = [4096]
  iterations = 300
}

workload "tcp" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "256MiB"
}
