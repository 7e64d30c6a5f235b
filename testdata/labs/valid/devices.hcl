lab "devices" {
  description = "rxe, siw and rdma blocks side by side; workloads name any of them"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
siw "a_iw" {
  host   = host.a
  netdev = "eth2"
}
siw "b" {
  host   = host.b
  netdev = "eth1"
  name   = "iw0"
  keep   = true
}
rdma "nic" {
  for_each = { a = host.a, b = host.b }
  host     = each.value
  device   = "mlx5_0"
  port     = 2
}
workload "over_siw" {
  tool   = "ib_write_bw"
  server = siw.b
  client = siw.a_iw
  sizes  = [65536]
}
workload "rping_siw" {
  tool   = "rping"
  server = siw.b
  client = siw.a_iw
}
workload "over_nic" {
  tool   = "ib_send_bw"
  server = rdma.nic["b"]
  client = rdma.nic["a"]
  transport = "UD"
}
workload "mixed" {
  tool   = "ib_read_lat"
  server = rdma.nic["b"]
  client = rxe.a
}
capture "iw" {
  host   = host.a
  netdev = siw.a_iw.netdev
  filter = "tcp"
}
