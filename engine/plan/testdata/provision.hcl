# A stock pair: the server says provision = true, the client does not
# (rlab run --provision would provision both).
lab "stock" {}

host "server" {
  address   = "192.0.2.10"
  become    = true
  provision = true
}
host "client" {
  address = "192.0.2.11"
  become  = true
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
  host   = host.server
  netdev = "eth1"
  filter = "udp port 4791"
}

workload "write_bw" {
  tool   = "ib_write_bw"
  server = rxe.server
  client = rxe.client
  sizes  = [65536]
}

workload "tcp" {
  tool   = "tcp"
  server = host.server
  client = host.client
  bytes  = "64MiB"
}
