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
siw "b" {
  host   = host.b
  netdev = "eth1"
}
workload "atomic" {
  tool   = "ib_atomic_bw" # ERROR: Not supported on iWARP
  server = rxe.a
  client = siw.b
}
workload "atomic_rxe" {
  tool   = "ib_atomic_lat"
  server = rxe.a
  client = rxe.a
}
