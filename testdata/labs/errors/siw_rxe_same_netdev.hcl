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
siw "a_iw" { # WARNING: siw and rxe on one netdev
  host   = host.a
  netdev = "eth1"
}
siw "b" {
  host   = host.b
  netdev = "eth1"
}
workload "w" {
  tool   = "rping"
  server = siw.a_iw
  client = siw.b
}
workload "ok" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.a
  transport = "UD" # ERROR: Unsupported transport
}
