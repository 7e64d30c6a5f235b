lab "t" {
  description = "error case"
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
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
host "c" {
  address = "192.0.2.3"
}
workload "t" {
  tool   = "tcp"
  server = host.a
  client = host.c
  expect {
    condition = result.tcp_mibps > 100 && result.tcp_bw > 1 # WARNING: Deprecated result name
  }
}
