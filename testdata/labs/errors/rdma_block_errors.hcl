lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rdma "nic" {
  host   = host.a
  device = "mlx5 0" # ERROR: Invalid RDMA device name
}
rdma "port" {
  host   = host.a
  device = "mlx5_0"
  port   = 0 # ERROR: Invalid value for port
}
rdma "nodev" { # ERROR: Missing required argument
  host = host.b
}
rdma "twice" {
  host   = host.b
  device = "mlx5_1"
}
rdma "again" {
  host   = host.b
  device = "mlx5_1" # ERROR: Duplicate rdma device name
}
rdma "extra" {
  host   = host.b
  device = "mlx5_2"
  netdev = "eth1" # ERROR: Unsupported argument
}
