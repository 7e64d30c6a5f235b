lab "t" {
  description = "error case"
}
host "a" {
  address = "192.0.2.1"
  user    = "root"
}
host "b" {
  address = "192.0.2.2"
  user    = "root"
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
}
workload "v" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
}
impair "x" { # WARNING: Impairment on the receiving end only
  host   = host.a
  netdev = "eth2" # ERROR: Unknown netdev
  loss   = "1%"
}
