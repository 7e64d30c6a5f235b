lab "found" {
  description = "rdma blocks: a RoCE NIC on server, an InfiniBand port on client, siw on both"
}
host "server" {
  address = "192.0.2.10"
}
host "client" {
  address = "192.0.2.11"
}
rdma "roce" {
  host   = host.server
  device = "mlx5_0"
}
rdma "ib" {
  host   = host.client
  device = "mlx5_1"
  port   = 2
}
siw "s" {
  host   = host.server
  netdev = "eth1"
}
siw "c" {
  host   = host.client
  netdev = "eth1"
}
workload "bw" {
  tool   = "ib_write_bw"
  server = rdma.roce
  client = rdma.ib
}
workload "atomic" {
  tool   = "ib_atomic_lat"
  server = rdma.roce
  client = rdma.ib
}
workload "iw" {
  tool   = "ib_read_bw"
  server = siw.s
  client = siw.c
}
