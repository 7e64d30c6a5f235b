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
rxe "c" {
  host   = host.a
  netdev = null # ERROR: Missing required argument
}
workload "w" { # ERROR: Missing tool
  tool   = null
  server = rxe.a
  client = rxe.b
}
workload "x" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect {
    condition = null # ERROR: Missing required argument
  }
}
host "d" {
  count   = null # ERROR: Null value for count
  address = "192.0.2.4"
}
