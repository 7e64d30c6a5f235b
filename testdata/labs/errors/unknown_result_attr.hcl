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
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect {
    condition = result.bandwidth > 1 # ERROR: Unsupported result attribute
  }
}
