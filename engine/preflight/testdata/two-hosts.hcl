lab "preflight" {
  description = "two hosts, rxe on eth1, a capture and two workloads"
}

host "server" {
  address = "192.0.2.10"
  become  = true
}
host "client" { address = "192.0.2.11" }

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
  max_size = "256MiB"
}

workload "write_bw" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
}

workload "ping" {
  tool   = "rping"
  server = rxe.server
  client = rxe.client
}
