lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "x" {
  host   = host.a
  netdev = "eth1"
}
siw "x" { # ERROR: Duplicate device name "x"
  host   = host.b
  netdev = "eth1"
}
rdma "y" {
  host   = host.b
  device = "mlx5_0"
}
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.x
  client = rdma.z # ERROR: Reference to undeclared rdma
}
workload "h" {
  tool   = "tcp"
  server = host.a
  client = rdma.y # ERROR: Wrong kind of reference
}
